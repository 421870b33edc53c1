import CredentialVault
import FoundationEssentials

/// RFC 3339 timestamps in UTC with milliseconds, as the CLI's JSON and text print them:
/// "2026-01-31T08:15:00.250Z".
enum RFC3339 {
    /// The UTC text for `date`, rounded to the millisecond; dates outside years 1–9999 are clamped.
    /// - Parameter date: the instant.
    /// - Returns: e.g. "2026-01-31T08:15:00.250Z".
    static func string(from date: Date) -> String {
        ISO8601Timestamp.clampedString(from: date)
    }

    /// Parses "YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)".
    /// - Parameter text: the timestamp.
    /// - Returns: the instant, or nil when the text is not RFC 3339.
    static func date(from text: String) -> Date? {
        ISO8601Timestamp.date(from: text)
    }
}
