/// The one escaping function for text that reaches a terminal from outside (a server, a file,
/// another user): control characters (C0, DEL, C1) and bidirectional overrides become visible
/// `\u{…}` escapes, so that no byte sequence can move the cursor, retitle the window or
/// reorder what is shown. Everything `ErrorReport` prints passes through it.
enum TerminalText {
    static func escaped(_ text: String) -> String {
        var result = ""
        result.unicodeScalars.reserveCapacity(text.unicodeScalars.count)
        for scalar in text.unicodeScalars {
            let value = scalar.value
            if (value < 0x20 && value != 0x0A) || (0x7F...0x9F).contains(value) || (0x202A...0x202E).contains(value)
                || (0x2066...0x2069).contains(value) {
                result += "\\u{" + String(value, radix: 16) + "}"
            } else {
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }
}
