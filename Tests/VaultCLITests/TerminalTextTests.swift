import Testing
@testable import VaultCLI

/// The CLI's one escaping function for untrusted text on a terminal.
@Suite struct TerminalTextTests {
    @Test func controlCharactersBecomeVisibleEscapes() {
        #expect(TerminalText.escaped("plain text, é 😀") == "plain text, é 😀")
        #expect(TerminalText.escaped("a\nb\tc\r") == "a\\nb\\tc\\r")
        #expect(TerminalText.escaped("\u{1B}]0;title\u{07}") == "\\x1b]0;title\\x07")
        #expect(TerminalText.escaped("\u{9B}31m\u{7F}") == "\\u{9b}31m\\x7f")
        #expect(TerminalText.escaped("back\\slash") == "back\\\\slash")
        #expect(TerminalText.escaped("\u{202E}txt.exe") == "\\u{202e}txt.exe")
        #expect(!TerminalText.escaped("\u{0}\u{1}\u{1F}").unicodeScalars.contains { $0.value < 0x20 })
    }
}
