import FoundationEssentials

/// UTC timestamps as ISO 8601 / RFC 3339 text with milliseconds: "2026-01-31T08:15:00.250Z".
///
/// Written out by hand because `Date.ISO8601FormatStyle` truncates rather than rounds
/// (1700000000.123 prints as ".122"), so a date would not survive a save and load.
/// Dates with whole milliseconds round-trip exactly.
package enum ISO8601Timestamp {
    /// 0001-01-01T00:00:00Z, the first instant with a four-digit year.
    package static let earliest: Double = -62_135_596_800
    /// 9999-12-31T23:59:59.999Z, the last one.
    package static let latest: Double = 253_402_300_799.999

    /// The text for `date`, rounded to the millisecond; nil outside years 1–9999.
    package static func string(from date: Date) -> String? {
        let seconds = date.timeIntervalSince1970
        guard seconds.isFinite, seconds >= earliest, seconds <= latest else { return nil }
        let milliseconds = Int64((seconds * 1000).rounded())
        let (days, millisecondOfDay) = floorDivide(milliseconds, 86_400_000)
        let (year, month, day) = civilDate(daysSinceEpoch: days)
        let hour = millisecondOfDay / 3_600_000
        let minute = millisecondOfDay / 60_000 % 60
        let second = millisecondOfDay / 1000 % 60
        let millisecond = millisecondOfDay % 1000
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(hour, 2)):\(pad(minute, 2)):\(pad(second, 2))"
            + ".\(pad(millisecond, 3))Z"
    }

    /// The text for `date`, rounded to the millisecond, with dates outside years 1–9999 clamped to
    /// the first or last instant and NaN read as the epoch: for what is shown or sent, never nil
    /// (the CLI's JSON and text, the agent's answers).
    package static func clampedString(from date: Date) -> String {
        let seconds = date.timeIntervalSince1970
        let clamped = seconds.isNaN ? 0 : min(max(seconds, earliest), latest)
        return string(from: Date(timeIntervalSince1970: clamped)) ?? "1970-01-01T00:00:00.000Z"
    }

    /// Parses "YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)"; nil for anything else.
    package static func date(from text: String) -> Date? {
        let bytes = Array(text.utf8)
        var index = 0
        func number(_ digits: Int) -> Int64? {
            guard bytes.count - index >= digits else { return nil }
            var value: Int64 = 0
            for _ in 0..<digits {
                let byte = bytes[index]
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
                value = value * 10 + Int64(byte - UInt8(ascii: "0"))
                index += 1
            }
            return value
        }
        func expect(_ allowed: UInt8...) -> Bool {
            guard index < bytes.count, allowed.contains(bytes[index]) else { return false }
            index += 1
            return true
        }
        guard let year = number(4), expect(UInt8(ascii: "-")), let month = number(2), expect(UInt8(ascii: "-")),
              let day = number(2), expect(UInt8(ascii: "T"), UInt8(ascii: "t"), UInt8(ascii: " ")),
              let hour = number(2), expect(UInt8(ascii: ":")), let minute = number(2), expect(UInt8(ascii: ":")),
              let second = number(2)
        else { return nil }
        guard year >= 1, (1...12).contains(month), day >= 1, day <= daysInMonth(year: year, month: month),
              hour <= 23, minute <= 59, second <= 59  // leap seconds are not representable in Date
        else { return nil }

        var fractionDigits: [UInt8] = []
        if expect(UInt8(ascii: ".")) {
            while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
                fractionDigits.append(bytes[index])
                index += 1
            }
            guard !fractionDigits.isEmpty else { return nil }
        }

        var offsetSeconds: Int64 = 0
        if !expect(UInt8(ascii: "Z"), UInt8(ascii: "z")) {
            guard index < bytes.count else { return nil }
            let sign: Int64 = bytes[index] == UInt8(ascii: "-") ? -1 : 1
            guard expect(UInt8(ascii: "+"), UInt8(ascii: "-")), let offsetHours = number(2),
                  expect(UInt8(ascii: ":")), let offsetMinutes = number(2),
                  offsetHours <= 23, offsetMinutes <= 59
            else { return nil }
            offsetSeconds = sign * (offsetHours * 3600 + offsetMinutes * 60)
        }
        guard index == bytes.count else { return nil }

        let days = daysSinceEpoch(year: year, month: month, day: day)
        let wholeSeconds = days * 86_400 + hour * 3600 + minute * 60 + second - offsetSeconds
        // Up to milliseconds, divide an exact integer so "….123Z" gives the same Double as
        // 1700000000.123 and what `string(from:)` wrote reads back identically.
        if fractionDigits.count <= 3 {
            var milliseconds: Int64 = 0
            for position in 0..<3 {
                let digit = position < fractionDigits.count ? Int64(fractionDigits[position] - UInt8(ascii: "0")) : 0
                milliseconds = milliseconds * 10 + digit
            }
            return Date(timeIntervalSince1970: Double(wholeSeconds * 1000 + milliseconds) / 1000)
        }
        let fraction = Double("0." + String(decoding: fractionDigits, as: UTF8.self)) ?? 0
        return Date(timeIntervalSince1970: Double(wholeSeconds) + fraction)
    }

    // MARK: Calendar arithmetic (proleptic Gregorian, after Howard Hinnant's algorithms)

    private static func daysSinceEpoch(year: Int64, month: Int64, day: Int64) -> Int64 {
        let shiftedYear = month <= 2 ? year - 1 : year
        let era = (shiftedYear >= 0 ? shiftedYear : shiftedYear - 399) / 400
        let yearOfEra = shiftedYear - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    private static func civilDate(daysSinceEpoch days: Int64) -> (Int64, Int64, Int64) {
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    private static func daysInMonth(year: Int64, month: Int64) -> Int64 {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    private static func floorDivide(_ value: Int64, _ divisor: Int64) -> (Int64, Int64) {
        let remainder = value % divisor
        return remainder < 0 ? (value / divisor - 1, remainder + divisor) : (value / divisor, remainder)
    }

    private static func pad(_ value: Int64, _ width: Int) -> String {
        let digits = String(value)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }
}
