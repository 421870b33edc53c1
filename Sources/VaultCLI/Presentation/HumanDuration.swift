import CredentialVault
import FoundationEssentials

/// Durations as people type and read them: "90s", "15m", "1h30m", "7d".
enum HumanDuration {
    /// The longest duration accepted: 100 years, so that `now + duration` stays a valid date.
    static let maximumSeconds: Int64 = 100 * 366 * 86_400

    /// Seconds per unit letter: s, m, h, d, w.
    static let units: [Character: Int64] = ["s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800]

    /// Parses one or more number–unit pairs: `90s`, `15m`, `1h30m`, `7d`, `2w`.
    ///
    /// Units are `s`, `m`, `h`, `d` and `w` (lower case); each may appear once. A bare
    /// number is refused: "90" could mean seconds or minutes.
    /// - Parameter text: the duration as typed.
    /// - Returns: the total in seconds, 0 or more.
    /// - Throws: `VaultError` `.invalidInput` naming what is wrong.
    static func seconds(in text: String) throws -> Int64 {
        guard !text.isEmpty else { throw invalid(text, "it is empty") }
        var total: Int64 = 0
        var digits = ""
        var seen = Set<Character>()
        for character in text {
            if character.isASCII, character.isWholeNumber {
                digits.append(character)
                guard digits.count <= 12 else { throw invalid(text, "the number is too large") }
                continue
            }
            guard let unit = units[character] else {
                throw invalid(text, "'\(character)' is not a unit; use s, m, h, d or w")
            }
            guard let value = Int64(digits) else { throw invalid(text, "a number must come before '\(character)'") }
            guard seen.insert(character).inserted else { throw invalid(text, "the unit '\(character)' appears twice") }
            let (product, overflow) = value.multipliedReportingOverflow(by: unit)
            guard !overflow, product <= maximumSeconds, total + product <= maximumSeconds else {
                throw invalid(text, "it is longer than 100 years")
            }
            total += product
            digits = ""
        }
        guard digits.isEmpty else { throw invalid(text, "'\(digits)' has no unit; write e.g. \(digits)s or \(digits)m") }
        return total
    }

    /// A duration for people, rounded down: "45 s", "12 min", "3 h", "1 h 30 min", "2 d", "2 d 5 h".
    ///
    /// Seconds and minutes stand alone; hours and days carry the next unit when it is not zero.
    /// - Parameter seconds: the interval; a negative one is described by its magnitude.
    /// - Returns: the text.
    static func describe(seconds: TimeInterval) -> String {
        let whole = Int64(min(abs(seconds), Double(Int64.max / 2)).rounded(.down))
        func pair(_ major: Int64, _ majorUnit: String, _ minor: Int64, _ minorUnit: String) -> String {
            minor == 0 ? "\(major) \(majorUnit)" : "\(major) \(majorUnit) \(minor) \(minorUnit)"
        }
        switch whole {
        case ..<60: return "\(whole) s"
        case ..<3600: return "\(whole / 60) min"
        case ..<86_400: return pair(whole / 3600, "h", whole % 3600 / 60, "min")
        default: return pair(whole / 86_400, "d", whole % 86_400 / 3600, "h")
        }
    }

    private static func invalid(_ text: String, _ reason: String) -> VaultError {
        VaultError(.invalidInput, "'\(text)' is not a duration: \(reason)",
                   fix: "write a duration like 90s, 15m, 1h30m or 7d")
    }
}
