import Foundation
import Testing
import TestScheduling
@testable import CredentialVault
@testable import VaultCLI

/// Every command that prints untrusted text (a token server's fields and errors, profile
/// fields, names and labels, JWT contents) is driven with ESC, C1, bidi and OSC 52 payloads;
/// nothing a terminal could act on may reach standard output or standard error in human mode.
@Suite(.blockingWork) struct TerminalInjectionTests {
    /// Writes the clipboard on terminals that honour OSC 52.
    static let osc52 = "\u{1b}]52;c;cHduZWQ=\u{07}"
    static let payload = osc52 + "\u{9b}31m\u{202e}evil\u{2066}"

    /// Records an issue for every byte or character in `data` that a terminal could act on:
    /// C0 controls other than newline, DEL, C1, bidi controls, format characters.
    static func expectInert(_ data: Data, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(!data.contains(0x1B), "raw ESC in \(what)", sourceLocation: sourceLocation)
        #expect(!data.contains { ($0 < 0x20 && $0 != 0x0A) || $0 == 0x7F }, "raw control byte in \(what)", sourceLocation: sourceLocation)
        let text = String(decoding: data, as: UTF8.self)
        let active = text.unicodeScalars.filter { $0 != "\n" && TerminalText.needsEscaping($0) }
        #expect(active.isEmpty, "raw \(active.map { String($0.value, radix: 16) }) in \(what): \(text)",
                sourceLocation: sourceLocation)
    }

    static func expectInert(_ result: CLIResult, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        expectInert(result.stdout, "stdout of \(what)", sourceLocation: sourceLocation)
        expectInert(result.stderr, "stderr of \(what)", sourceLocation: sourceLocation)
    }

    /// A token response whose `token_type` carries `payload`, as JSON text (escaped the JSON way).
    static func hostileTokenResponse() throws -> Data {
        let object: [String: Any] = ["access_token": "opaque-access-token", "token_type": "Bearer" + payload,
                                     "expires_in": 3600, "refresh_token": "r1"]
        return try JSONSerialization.data(withJSONObject: object)
    }

    @Test func statusShowsServerTokenTypeAndProfileFieldsEscaped() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let signin = try sandbox.run(["signin", "--user-id", "u1", "--name", "Al" + Self.payload, "--email", Self.osc52 + "a@b.c"],
                                     stdin: Self.hostileTokenResponse(), environment: key)
        #expect(signin.status == 0, "\(signin.stderrText)")
        Self.expectInert(signin, "signin")
        let status = try sandbox.run(["status"], environment: key)
        #expect(status.status == 0, "\(status.stderrText)")
        Self.expectInert(status, "status")
        #expect(status.stdoutText.contains("Bearer\\x1b]52;c;cHduZWQ=\\x07\\u{9b}31m\\u{202e}evil\\u{2066}"), "\(status.stdoutText)")
        #expect(status.stdoutText.contains("Al\\x1b]52"))
        // JSON keeps the exact text, escaped the JSON way, and stays inert on a terminal.
        let json = try sandbox.run(["status", "--json"], environment: key)
        Self.expectInert(json, "status --json")
        let object = try #require(try JSONSerialization.jsonObject(with: json.stdout) as? [String: Any])
        #expect(object["state"] as? String != nil)
        #expect(json.stdoutText.contains(#"\u001b]52"#))
        // sign-out names the user it signed out.
        let signout = try sandbox.run(["signout"], environment: key)
        Self.expectInert(signout, "signout")
    }

    @Test func serverErrorsAndDuplicateKeysAreEscapedInErrorMessages() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let oauthError = Data(#"{"error":"\u001b]52;c;cHduZWQ=\u0007\u009b31m\u202e","error_description":"x"}"#.utf8)
        let refused = try sandbox.run(["signin", "--user-id", "u1"], stdin: oauthError, environment: key)
        #expect(refused.status != 0)
        #expect(refused.stderrText.contains("\\x1b]52"), "\(refused.stderrText)")
        Self.expectInert(refused, "signin with an OAuth error")
        let duplicate = Data(#"{"access_token":"a","token_type":"b","\u001b]52;c;eA==\u0007":1,"\u001b]52;c;eA==\u0007":2}"#.utf8)
        let refusedDuplicate = try sandbox.run(["signin", "--user-id", "u1"], stdin: duplicate, environment: key)
        #expect(refusedDuplicate.status != 0)
        #expect(refusedDuplicate.stderrText.contains("duplicate"), "\(refusedDuplicate.stderrText)")
        Self.expectInert(refusedDuplicate, "signin with a duplicated key")
    }

    @Test func hostileNamesAndLabelsAreRefusedWithAnEscapedMessage() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        for (name, label) in [(Self.payload, "ok"), ("ok", Self.payload), ("x\u{85}", "ok"), ("ok", "a\u{202e}b")] {
            let add = try sandbox.run(["add", name, "--label", label], stdin: Data("s".utf8), environment: key)
            #expect(add.status != 0)
            Self.expectInert(add, "add")
        }
        // get / rm of a hostile name: not found, quoted safely.
        Self.expectInert(try sandbox.run(["get", Self.payload], environment: key), "get")
        Self.expectInert(try sandbox.run(["rm", Self.payload], environment: key), "rm")
    }

    @Test func invisibleCharactersAllowedInNamesAndLabelsAreShownEscaped() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let name = "pay\u{200b}pal"
        let add = try sandbox.run(["add", name, "--label", "soft\u{ad}hyphen\u{feff}"], stdin: Data("s".utf8), environment: key)
        #expect(add.status == 0, "\(add.stderrText)")
        Self.expectInert(add, "add")
        let list = try sandbox.run(["list"], environment: key)
        Self.expectInert(list, "list")
        #expect(list.stdoutText.contains("pay\\u{200b}pal"))
        Self.expectInert(try sandbox.run(["list", "--json"], environment: key), "list --json")
        let inspect = try sandbox.run(["inspect", name], environment: key)
        Self.expectInert(inspect, "inspect")
        #expect(inspect.stdoutText.contains("soft\\u{ad}hyphen\\u{feff}"))
        Self.expectInert(try sandbox.run(["verify"], environment: key), "verify")
        Self.expectInert(try sandbox.run(["rm", name], environment: key), "rm")
    }

    @Test func inspectEscapesJWTHeaderAndClaims() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let header = try JSONSerialization.data(withJSONObject: ["alg": "RS256", "kid": Self.payload])
        let claims = try JSONSerialization.data(withJSONObject: ["sub": Self.osc52, "name": "a\u{85}\u{202e}b\nc", "exp": 4102444800])
        let token = base64URL(String(decoding: header, as: UTF8.self)) + "." + base64URL(String(decoding: claims, as: UTF8.self))
            + ".U0lHTkFUVVJF"
        #expect(try sandbox.run(["add", "id", "--kind", "id-token"], stdin: Data(token.utf8), environment: key).status == 0)
        let human = try sandbox.run(["inspect", "id"], environment: key)
        #expect(human.status == 0, "\(human.stderrText)")
        Self.expectInert(human, "inspect")
        #expect(human.stdoutText.contains("]52;c;cHduZWQ="))
        let json = try sandbox.run(["inspect", "id", "--json"], environment: key)
        Self.expectInert(json, "inspect --json")
        let object = try #require(try JSONSerialization.jsonObject(with: json.stdout) as? [String: Any])
        let jwt = try #require(object["jwt"] as? [String: Any])
        #expect((jwt["claims"] as? [String: Any])?["sub"] as? String == Self.osc52, "JSON carries the exact claim")
    }

    /// Names or labels an older version (or another implementation) stored are shown escaped
    /// by the layout itself, newlines included, so one cannot fake a row or a field.
    @Test func tableAndFieldsEscapeWhatOlderVaultsMayHold() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let entry = EntryMetadata(name: "n\u{1b}[2J\n\u{85}", owner: "", kind: .generic, label: "l\u{202e}\r\nFAKE",
                                  createdAt: now, updatedAt: now, expiresAt: nil, transferable: true, secretByteCount: 1)
        let table = VaultCommand.List.table([entry], now: now)
        Self.expectInert(Data(table.utf8), "list table")
        #expect(table.split(separator: "\n").count == 2, "one header and one row: \(table)")
        let fields = TextLayout.fields([("name", TerminalText.escaped(entry.name)), ("label", "a\u{9b}b")])
        Self.expectInert(Data(fields.utf8), "fields")
    }
}
