/// Writes `JSONValue`s as RFC 8259 text with sorted keys, so equal values give equal bytes.
package struct JSONWriter {
    /// One member per line, indented by two spaces, `"key": value`.
    let prettyPrinted: Bool
    /// The text so far.
    package private(set) var bytes: [UInt8] = []

    package init(prettyPrinted: Bool) {
        self.prettyPrinted = prettyPrinted
    }

    /// Appends `value`.
    /// - Throws: `VaultError` `.invalidInput` for a NaN or infinite number (JSON has none).
    package mutating func write(_ value: JSONValue) throws(VaultError) {
        try write(value, indent: 0)
    }

    /// `value` as an integer when it is a whole number that `Int64` holds exactly, so
    /// 1700000000 is written as `1700000000` and not `1.7e+09`.
    static func exactInteger(_ value: Double) -> Int64? {
        Int64(exactly: value)
    }

    private mutating func write(_ value: JSONValue, indent: Int) throws(VaultError) {
        switch value {
        case .null: append("null")
        case .bool(let flag): append(flag ? "true" : "false")
        case .number(let number): try writeNumber(number)
        case .integer(let integer): append(String(integer))
        case .string(let string): writeString(string)
        case .array(let elements):
            guard !elements.isEmpty else { return append("[]") }
            append("[")
            for (index, element) in elements.enumerated() {
                if index > 0 { append(",") }
                newline(indent: indent + 1)
                try write(element, indent: indent + 1)
            }
            newline(indent: indent)
            append("]")
        case .object(let members):
            guard !members.isEmpty else { return append("{}") }
            append("{")
            // Byte order, not `String` order, so the output never depends on Unicode tables.
            let keys = members.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
            for (index, key) in keys.enumerated() {
                if index > 0 { append(",") }
                newline(indent: indent + 1)
                writeString(key)
                append(prettyPrinted ? ": " : ":")
                if let member = members[key] { try write(member, indent: indent + 1) }
            }
            newline(indent: indent)
            append("}")
        }
    }

    private mutating func writeNumber(_ number: Double) throws(VaultError) {
        guard number.isFinite else {
            throw VaultError(.invalidInput, "JSON cannot hold a NaN or infinite number")
        }
        if let integer = Self.exactInteger(number) {
            append(String(integer))
        } else {
            // Swift prints the shortest text that reads back as the same Double, and
            // its forms ("0.1", "1e-07", "1.5e+300") are all valid JSON numbers.
            append(String(describing: number))
        }
    }

    private mutating func writeString(_ string: String) {
        Self.appendQuoted(string, to: &bytes)
    }

    /// Appends `string` as a JSON string literal (quoted, escaped) to `bytes`.
    package static func appendQuoted(_ string: String, to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "\""))
        // Most strings need no escaping: copy them in one go.
        // Bytes >= 0x80 take the slow path only when the string holds a character a terminal
        // could act on (C1, bidi, format): those are written as \uXXXX, so JSON shown on a
        // terminal is as safe as the human output.
        if !string.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }),
           !string.utf8.contains(where: { $0 >= 0x80 }) || !string.unicodeScalars.contains(where: TerminalText.needsEscaping) {
            bytes.append(contentsOf: string.utf8)
            bytes.append(UInt8(ascii: "\""))
            return
        }
        func append(_ text: String) { bytes.append(contentsOf: text.utf8) }
        for scalar in string.unicodeScalars {
            guard scalar.value < 0x80 else {
                if TerminalText.needsEscaping(scalar) {
                    appendUnicodeEscape(scalar, to: &bytes)
                } else {
                    bytes.append(contentsOf: String(scalar).utf8)
                }
                continue
            }
            let byte = UInt8(scalar.value)
            switch byte {
            case UInt8(ascii: "\""): append("\\\"")
            case UInt8(ascii: "\\"): append("\\\\")
            case 0x0A: append("\\n")
            case 0x0D: append("\\r")
            case 0x09: append("\\t")
            case 0x08: append("\\b")
            case 0x0C: append("\\f")
            case 0..<0x20, 0x7F:
                append("\\u00")
                bytes.append(Self.hexDigit(byte >> 4))
                bytes.append(Self.hexDigit(byte & 0x0F))
            default:
                bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// `\uXXXX` (a surrogate pair above U+FFFF) for `scalar`.
    private static func appendUnicodeEscape(_ scalar: Unicode.Scalar, to bytes: inout [UInt8]) {
        for unit in String(scalar).utf16 {
            bytes.append(contentsOf: "\\u".utf8)
            for shift in stride(from: 12, through: 0, by: -4) {
                bytes.append(hexDigit(UInt8((unit >> UInt16(shift)) & 0x0F)))
            }
        }
    }

    private mutating func newline(indent: Int) {
        guard prettyPrinted else { return }
        bytes.append(0x0A)
        bytes.append(contentsOf: repeatElement(UInt8(ascii: " "), count: indent * 2))
    }

    private mutating func append(_ text: String) {
        bytes.append(contentsOf: text.utf8)
    }

    private static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
    }
}
