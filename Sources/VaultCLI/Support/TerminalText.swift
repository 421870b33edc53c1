/// Makes untrusted text (from git, docker, a file, another user) safe to print on a terminal.
///
/// The one escaping function of the CLI: control characters (C0, DEL, C1), which could move
/// the cursor, retitle the window or hide output, become visible `\n`, `\t`, `\x1b`,
/// `\u{9b}` escapes; a backslash is doubled so the result cannot be mistaken for one.
enum TerminalText {
    /// `text` with every control character escaped.
    static func escaped(_ text: String) -> String {
        var result = ""
        result.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0x5C: result += "\\\\"
            case 0x0A: result += "\\n"
            case 0x0D: result += "\\r"
            case 0x09: result += "\\t"
            case 0x00..<0x20, 0x7F:
                result += "\\x" + hexByte(scalar.value)
            case 0x80..<0xA0, 0x2028, 0x2029, 0x202A...0x202E, 0x2066...0x2069:
                result += "\\u{" + String(scalar.value, radix: 16) + "}"
            default:
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    private static func hexByte(_ value: UInt32) -> String {
        let digits = String(value, radix: 16)
        return digits.count == 1 ? "0" + digits : digits
    }
}
