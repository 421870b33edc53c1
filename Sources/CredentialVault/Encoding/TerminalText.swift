/// The one escaping function for untrusted text shown to a person: a token server's
/// `token_type` or error code, profile fields, entry names and labels, JWT claims, input
/// quoted in an error message.
///
/// A terminal acts on control sequences: ESC starts ANSI/OSC sequences (OSC 52 writes the
/// clipboard), C1 controls (U+0080–U+009F) do the same on terminals that honour 8-bit
/// controls, bidi overrides and isolates reorder what is shown, and other format characters
/// are invisible. Each such character is replaced by a visible escape: `\x1b` for C0 and
/// DEL, `\u{85}` for everything else. Printable text, including non-ASCII letters and
/// emoji, passes unchanged. The result holds none of the escaped characters, so escaping
/// twice gives the same text as escaping once.
package enum TerminalText {
    /// `text` with every character that could act on a terminal or hide itself replaced by
    /// a visible escape.
    /// - Parameters:
    ///   - text: untrusted text.
    ///   - keepingLineBreaks: leave "\n" as it is (for whole documents whose line breaks
    ///     are the program's own); single fields escape it like every other control.
    /// - Returns: text safe to write to a terminal.
    package static func escaped(_ text: String, keepingLineBreaks: Bool = false) -> String {
        // Fast path: printable ASCII (and newlines when kept) needs nothing.
        if text.utf8.allSatisfy({ ($0 >= 0x20 && $0 < 0x7F) || (keepingLineBreaks && $0 == 0x0A) }) { return text }
        var result = ""
        result.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            if keepingLineBreaks && scalar == "\n" {
                result.unicodeScalars.append(scalar)
            } else if scalar.value < 0x20 || scalar.value == 0x7F {
                result += "\\x" + hex(scalar.value, width: 2)
            } else if needsEscaping(scalar) {
                result += "\\u{" + hex(scalar.value, width: 1) + "}"
            } else {
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    /// Whether `scalar` is escaped by `escaped(_:)`: C0 controls, DEL, C1 controls, bidi
    /// controls, line and paragraph separators, format characters (general category Cf,
    /// e.g. zero-width spaces and joiners, the BOM, soft hyphen, tag characters) and the
    /// invisible Hangul fillers and grapheme joiner.
    package static func needsEscaping(_ scalar: Unicode.Scalar) -> Bool {
        let value = scalar.value
        if value < 0x20 || (value >= 0x7F && value <= 0x9F) { return true }
        if value < 0xA0 { return false }
        if isBidiControl(scalar) { return true }
        switch value {
        case 0x034F, 0x115F, 0x1160, 0x3164, 0xFFA0: return true
        default: break
        }
        switch scalar.properties.generalCategory {
        case .format, .lineSeparator, .paragraphSeparator, .control: return true
        default: return false
        }
    }

    /// Whether `scalar` is a C0 or C1 control or DEL.
    package static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (scalar.value >= 0x7F && scalar.value <= 0x9F)
    }

    /// Whether `scalar` changes the display order of text: U+061C, U+200E/F, U+202A–U+202E,
    /// U+2066–U+2069.
    package static func isBidiControl(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: return true
        default: return false
        }
    }

    private static func hex(_ value: UInt32, width: Int) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }
}
