/// Text from an authorization server, made safe to put in an error message.
enum ServerText {
    /// The longest server text kept, in characters.
    static let maximumLength = 300

    /// Control characters (C0, DEL, C1, and the bidirectional overrides) become "\u{…}"
    /// escapes, and the text is cut at `maximumLength`; nothing else changes.
    static func sanitized(_ text: String) -> String {
        var result = ""
        var kept = 0
        for scalar in text.unicodeScalars {
            if kept >= maximumLength {
                result += "…"
                break
            }
            let value = scalar.value
            if value < 0x20 || (0x7F...0x9F).contains(value) || (0x202A...0x202E).contains(value)
                || (0x2066...0x2069).contains(value) {
                result += "\\u{" + String(value, radix: 16) + "}"
            } else {
                result.unicodeScalars.append(scalar)
            }
            kept += 1
        }
        return result
    }
}
