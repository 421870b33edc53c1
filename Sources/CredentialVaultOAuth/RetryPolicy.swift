import CredentialVault
import FoundationEssentials

/// Bounded retries of transient failures: exponential backoff with full jitter, and the
/// server's `Retry-After` honoured when it is not longer than `maximumRetryAfter`.
///
/// A refresh is retried only when the server surely did not act on it (the connection was
/// refused, or it answered 5xx/429): after a timeout or an unreadable 200 the server may have
/// rotated the refresh token already, and presenting the old one again would make a
/// reuse-protecting server revoke the whole session.
public struct RetryPolicy: Sendable, Hashable {
    /// Attempts in all, the first included (at least 1).
    public var maximumAttempts: Int
    /// The backoff before the second attempt; doubled before each further one.
    public var baseDelay: Duration
    /// No backoff is longer than this.
    public var maximumDelay: Duration
    /// A `Retry-After` longer than this is not waited for: the error is reported at once.
    public var maximumRetryAfter: Duration

    /// Defaults: 3 attempts, 0.5 s base, 8 s cap, Retry-After up to 30 s.
    public init(maximumAttempts: Int = 3, baseDelay: Duration = .milliseconds(500), maximumDelay: Duration = .seconds(8),
                maximumRetryAfter: Duration = .seconds(30)) {
        self.maximumAttempts = max(1, maximumAttempts)
        self.baseDelay = baseDelay
        self.maximumDelay = maximumDelay
        self.maximumRetryAfter = maximumRetryAfter
    }

    /// No retries.
    public static let never = RetryPolicy(maximumAttempts: 1)

    /// The wait before attempt `attempt + 1` (attempt counts from 1): the server's
    /// `Retry-After` when given, else a random delay in [0, min(cap, base·2^(attempt-1))].
    func delay(afterAttempt attempt: Int, retryAfter: Duration?) -> Duration {
        if let retryAfter { return min(retryAfter, maximumRetryAfter) }
        let exponent = min(attempt - 1, 30)
        let ceiling = min(maximumDelay, baseDelay * (1 << exponent))
        let milliseconds = max(0, Int(Self.seconds(ceiling) * 1000))
        return .milliseconds(Int.random(in: 0...milliseconds))
    }

    /// Parses `Retry-After`: delay-seconds or an HTTP-date (RFC 9110 §10.2.3).
    static func retryAfter(_ value: String?, now: Date = Date()) -> Duration? {
        guard let value = value.map(Self.trimmingSpaces), !value.isEmpty else { return nil }
        if let seconds = Int(value), seconds >= 0 { return .seconds(seconds) }
        guard let date = httpDate(value) else { return nil }
        return .milliseconds(max(0, Int(date.timeIntervalSince(now) * 1000)))
    }

    /// An IMF-fixdate (RFC 9110 §5.6.7), "Sun, 06 Nov 1994 08:49:37 GMT", the form servers
    /// must send; nil for anything else.
    static func httpDate(_ value: String) -> Date? {
        let parts = value.split(separator: " ", omittingEmptySubsequences: false)
        guard parts.count == 6, weekdays.contains(String(parts[0])), parts[5] == "GMT",
              parts[1].count == 2, parts[3].count == 4, parts[4].count == 8,
              let month = months.firstIndex(of: String(parts[2])) else { return nil }
        let monthNumber = month + 1 < 10 ? "0\(month + 1)" : "\(month + 1)"
        return ISO8601Timestamp.date(from: "\(parts[3])-\(monthNumber)-\(parts[1])T\(parts[4])Z")
    }

    private static let weekdays: Set<String> = ["Mon,", "Tue,", "Wed,", "Thu,", "Fri,", "Sat,", "Sun,"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// `text` without leading and trailing spaces and tabs (HTTP's optional whitespace).
    private static func trimmingSpaces(_ text: String) -> String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        return String(text.drop(while: isSpace).reversed().drop(while: isSpace).reversed())
    }

    static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
