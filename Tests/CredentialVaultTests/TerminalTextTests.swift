import Foundation
import Testing
@testable import CredentialVault

/// `TerminalText`, the one escaping function for untrusted text shown to a person, and the
/// input rules for names and labels that go with it.
@Suite struct TerminalTextTests {
    static let osc52 = "\u{1b}]52;c;aGVsbG8=\u{07}"

    /// True when `text` holds nothing a terminal could act on (newlines allowed when asked).
    static func isInert(_ text: String, allowingNewlines: Bool = false) -> Bool {
        text.unicodeScalars.allSatisfy { scalar in
            (allowingNewlines && scalar == "\n") || !TerminalText.needsEscaping(scalar)
        }
    }

    @Test(arguments: [
        (osc52, "\\x1b]52;c;aGVsbG8=\\x07"),
        ("\u{1b}[31mred", "\\x1b[31mred"),
        ("a\u{85}b\u{9b}c", "a\\u{85}b\\u{9b}c"),
        ("abc\u{202e}fdp.exe", "abc\\u{202e}fdp.exe"),
        ("\u{2066}x\u{2069}\u{200e}\u{200f}\u{061c}", "\\u{2066}x\\u{2069}\\u{200e}\\u{200f}\\u{61c}"),
        ("zero\u{200b}width\u{feff}", "zero\\u{200b}width\\u{feff}"),
        ("line\nbreak\r\t\u{7f}", "line\\x0abreak\\x0d\\x09\\x7f"),
        ("sep\u{2028}\u{2029}", "sep\\u{2028}\\u{2029}"),
    ])
    func escapesEveryActiveOrInvisibleCharacterVisibly(input: String, expected: String) {
        let escaped = TerminalText.escaped(input)
        #expect(escaped == expected)
        #expect(Self.isInert(escaped))
        #expect(TerminalText.escaped(escaped) == escaped, "escaping twice changes nothing")
    }

    @Test func printableTextPassesUnchanged() {
        for text in ["plain ASCII ~!@#$%^&*()", "é 🔑 日本語 Ελληνικά", "مرحبا", ""] {
            #expect(TerminalText.escaped(text) == text)
        }
    }

    @Test func lineBreaksAreKeptOnlyWhenAsked() {
        #expect(TerminalText.escaped("a\nb\u{1b}", keepingLineBreaks: true) == "a\nb\\x1b")
        #expect(TerminalText.escaped("a\nb", keepingLineBreaks: false) == "a\\x0ab")
    }

    @Test func jsonOutputEscapesC1BidiAndFormatCharactersAsUnicodeEscapes() throws {
        let hostile = "t\u{1b}\u{85}\u{202e}\u{200b}\u{7f}é🔑\u{E0041}"
        let bytes = try JSONValue.object(["k": .string(hostile)]).serialized()
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text == #"{"k":"t\u001b\u0085\u202e\u200b\u007fé🔑\udb40\udc41"}"#)
        #expect(Self.isInert(text))
        // Still valid JSON that reads back as the same string.
        #expect(try JSONParser.parse(bytes) == .object(["k": .string(hostile)]))
    }

    @Test func libraryErrorsQuotingNamesAndUserIDsAreEscaped() {
        let hostile = "a" + Self.osc52 + "\u{85}\u{202e}"
        for error in [VaultError.entryNotFound(hostile), VaultError.entryExists(hostile)] {
            #expect(Self.isInert(error.message), "\(error.message)")
            #expect(error.message.contains("\\x1b]52"))
        }
        let user = User(id: hostile)
        #expect(Self.isInert("\(SessionState.expired(user, hasRefreshToken: false, expiresAt: nil))"))
    }

    @Test func libraryErrorsQuotingServerTextAreEscaped() {
        let duplicate = Data(#"{"\u001b]52;c;eA==\u0007":1,"\u001b]52;c;eA==\u0007":2}"#.utf8)
        do {
            _ = try JSONParser.parse(duplicate)
            Issue.record("a duplicate key must be refused")
        } catch {
            #expect(Self.isInert("\(error)"), "\(error)")
            #expect("\(error)".contains("\\x1b]52"))
        }
        let oauth = Data(#"{"error":"\u001b]52;c;eA==\u0007\u009b\u202e"}"#.utf8)
        do {
            _ = try TokenResponse.parse(oauth, receivedAt: Date())
            Issue.record("an OAuth error response must be refused")
        } catch let error as VaultError {
            #expect(Self.isInert(error.message), "\(error.message)")
            #expect(error.message.contains("\\x1b]52"))
        } catch {
            Issue.record("unexpected \(error)")
        }
    }
}

/// Names, owners and labels refuse what would change how they are shown; names must be NFC.
@Suite struct DisplaySafeInputTests {
    static func store(_ temp: TemporaryDirectory) throws -> SecretStore {
        try SecretStore.create(in: temp.child("v"), key: Fixtures.keyFile("alice.key", in: temp), options: .testing())
    }

    @Test(arguments: ["\u{1b}]52;c;eA==\u{07}", "a\u{85}b", "a\u{9b}31m", "abc\u{202e}txt", "x\u{2066}y", "a\u{200f}", "a\u{2028}b"])
    func namesAndLabelsRefuseControlsAndBidiOverrides(hostile: String) throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let store = try Self.store(temp)
        let before = try Data(contentsOf: URL(fileURLWithPath: store.vaultPath))
        expectVaultError(.invalidInput) { try store.put(NewEntry(name: hostile, secret: secret("s"))) }
        expectVaultError(.invalidInput) { try store.put(NewEntry(name: "ok", secret: secret("s"), label: hostile)) }
        expectVaultError(.invalidInput) { try store.put(NewEntry(name: "ok", owner: hostile, secret: secret("s"))) }
        #expect(try Data(contentsOf: URL(fileURLWithPath: store.vaultPath)) == before, "nothing was written")
    }

    @Test func aNameThatLooksLikeAnotherCannotBeAddedBesideIt() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let store = try Self.store(temp)
        let composed = "caf\u{e9}"          // NFC
        let decomposed = "cafe\u{301}"      // NFD: looks the same
        #expect(composed == decomposed, "Swift calls them equal; their bytes differ")
        #expect(Array(composed.utf8) != Array(decomposed.utf8))
        try store.put(NewEntry(name: composed, secret: secret("one")))
        let error = expectVaultError(.invalidInput) { try store.put(NewEntry(name: decomposed, secret: secret("two"))) }
        #expect(error?.message.contains("NFC") == true)
        #expect(try store.list().map(\.name) == [composed])
        // Non-ASCII NFC names and labels with emoji stay welcome.
        try store.put(NewEntry(name: "日本語 🔑", secret: secret("three"), label: "naïve 👨‍👩‍👧"))
    }
}
