import Foundation
import Testing
import TestScheduling

/// `vault import --from FORMAT SOURCE`: real password stores (gpg and pass from Debian), real
/// KeePassXC exports (keepassxc-cli from Debian, plus a committed one), Bitwarden's documented JSON
/// format; one transaction, invalid names stop it, existing names are kept unless --replace.
@Suite(.blockingWork) struct ImportCommandTests {
    static func tool(_ name: String) -> Bool {
        ["/usr/bin/", "/bin/"].contains { FileManager.default.isExecutableFile(atPath: $0 + name) }
    }

    static var hasPass: Bool { tool("pass") && tool("gpg") }
    static var hasKeePassXC: Bool { tool("keepassxc-cli") }

    /// Runs a program to completion; returns its status and standard output.
    @discardableResult
    static func shell(_ arguments: [String], stdin: String = "", environment: [String: String]) throws -> (Int32, Data) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        process.environment = environment
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        input.fileHandleForWriting.write(Data(stdin.utf8))
        try input.fileHandleForWriting.close()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, data)
    }

    static func fixture(_ name: String) throws -> String {
        try CLIFixtures.root.appendingPathComponent("import/\(name)").path
    }

    /// The expected entries of a committed export: name, secret, label.
    static func expectedEntries(_ name: String) throws -> [(name: String, secret: String, label: String?)] {
        let data = try Data(contentsOf: URL(fileURLWithPath: try fixture(name)))
        let json = try JSONSerialization.jsonObject(with: data)
        let list = (json as? [[String: Any]]) ?? ((json as? [String: Any])?["entries"] as? [[String: Any]]) ?? []
        return list.compactMap { item in
            guard let name = item["name"] as? String, let secret = item["secret"] as? String else { return nil }
            return (name, secret, item["label"] as? String)
        }
    }

    static func listJSON(_ sandbox: CLISandbox, _ key: [String: String]) throws -> [[String: Any]] {
        let list = try sandbox.run(["list", "--json"], environment: key)
        return (try JSONSerialization.jsonObject(with: list.stdout) as? [[String: Any]]) ?? []
    }

    // MARK: pass

    @Test(.enabled(if: ImportCommandTests.hasPass))
    func aRealPasswordStoreIsImportedAsPassShowPrintsIt() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let store = sandbox.path("store")
        let environment = try Self.passStore(sandbox, key)
        defer { _ = try? Self.shell(["gpgconf", "--kill", "gpg-agent"], environment: environment) }
        let entries = [("github.com", "gh-token-1\n"), ("Email/work", "p@ss word\nuser: me@example.test\nurl: https://mail.test\n"),
                       ("deep/a/b/c", "no newline at the end")]
        for (name, secret) in entries {
            try #require(try Self.shell(["pass", "insert", "-m", name], stdin: secret, environment: environment).0 == 0)
        }
        let result = try sandbox.run(["import", "--from", "pass", store, "--json"], environment: environment)
        #expect(result.status == 0, "\(result.stderrText)")
        let report = try #require(try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any])
        #expect(Set(report["imported"] as? [String] ?? []) == Set(entries.map(\.0)))
        for (name, _) in entries {
            let shown = try Self.shell(["pass", "show", name], environment: environment).1
            let got = try sandbox.run(["get", name], environment: environment)
            #expect(got.stdout == shown, "\(name): the secret is the whole file as pass show prints it")
        }
        #expect(!result.stderr.contains(Data(text: "gh-token-1")))

        // A dry run decrypts nothing and writes nothing; a second import skips what is there.
        try #require(try Self.shell(["pass", "insert", "-m", "later"], stdin: "later-secret", environment: environment).0 == 0)
        let dry = try sandbox.run(["import", "--from", "pass", store, "--dry-run"], environment: environment.merging(["GNUPGHOME": sandbox.path("none")]) { _, new in new })
        #expect(dry.status == 0, "\(dry.stderrText)")
        #expect(dry.stdoutText == "later\n")
        #expect(try sandbox.run(["get", "later"], environment: environment).status == 66)
        let again = try sandbox.run(["import", "--from", "pass", store], environment: environment)
        #expect(again.status == 0)
        #expect(again.stderrText.contains("Skipped 'github.com': already in the vault"))
        #expect(try sandbox.run(["get", "later"], environment: environment).stdoutText == "later-secret")
    }

    /// A gpg home with a key without passphrase and a password store (`sandbox.path("store")`) for it;
    /// returns the environment that uses them (stop its gpg-agent with `gpgconf --kill gpg-agent`).
    static func passStore(_ sandbox: CLISandbox, _ key: [String: String]) throws -> [String: String] {
        let gnupg = sandbox.path("gnupg")
        try FileManager.default.createDirectory(atPath: gnupg, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        var environment = sandbox.environment.merging(key) { _, new in new }
        environment["GNUPGHOME"] = gnupg
        environment["PASSWORD_STORE_DIR"] = sandbox.path("store")
        let (generated, _) = try Self.shell(["gpg", "--batch", "--pinentry-mode", "loopback", "--passphrase", "",
                                             "--quick-gen-key", "Vault Test <vault-test@example.test>", "future-default", "default", "never"],
                                            environment: environment)
        guard generated == 0, try Self.shell(["pass", "init", "vault-test@example.test"], environment: environment).0 == 0 else {
            throw CLITestFailure("gpg could not make a key, or pass could not start a store")
        }
        return environment
    }

    /// Issue 36 point 13: an entry that decrypts to more than 1 MiB (a large file, or a small
    /// compression bomb) is refused at once, gpg ended (not left blocked on its full pipe for the
    /// 300 s timeout); the import stops (64, nothing written), or with --skip-invalid goes on.
    @Test(.enabled(if: ImportCommandTests.hasPass))
    func anOversizedOrBombEntryIsRefusedAtOnceAndGpgEnded() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let store = sandbox.path("store")
        let environment = try Self.passStore(sandbox, key)
        defer { _ = try? Self.shell(["gpgconf", "--kill", "gpg-agent"], environment: environment) }
        var random = [UInt8](repeating: 0, count: 3 << 19)   // 1.5 MiB that does not compress
        for index in random.indices { random[index] = UInt8(ascii: "a") + UInt8.random(in: 0..<26) }
        for (name, secret) in [("big", String(decoding: random, as: UTF8.self)), ("small", "fine")] {
            try #require(try Self.shell(["pass", "insert", "-m", name], stdin: secret, environment: environment).0 == 0)
        }
        // pass itself never compresses (--compress-algo=none); a bomb is a file gpg compressed.
        let bomb = ["gpg", "--batch", "--yes", "--trust-model", "always", "--compress-algo", "zlib", "--compress-level", "9",
                    "-e", "-r", "vault-test@example.test", "-o", store + "/bomb.gpg"]
        try #require(try Self.shell(bomb, stdin: String(repeating: "0", count: 32 << 20), environment: environment).0 == 0)
        let bombSize = try #require(try FileManager.default.attributesOfItem(atPath: store + "/bomb.gpg")[.size] as? Int)
        #expect(bombSize < 1 << 20, "the bomb is small on disk (\(bombSize) bytes)")

        // Before: vault stopped reading at 1 MiB and waited for gpg, blocked on the pipe, until 300 s.
        let stopped = try sandbox.run(["import", "--from", "pass", store, "--json"], environment: environment, timeout: 120)
        #expect(stopped.status == 64, "\(stopped.stderrText)")
        #expect(stopped.stderrText.contains("big: it decrypts to more than 1048576 bytes"), "\(stopped.stderrText)")
        #expect(stopped.stderrText.contains("bomb: it decrypts to more than 1048576 bytes"), "\(stopped.stderrText)")
        #expect(try Self.listJSON(sandbox, key).isEmpty, "nothing was written")

        let skipped = try sandbox.run(["import", "--from", "pass", store, "--skip-invalid"], environment: environment, timeout: 120)
        #expect(skipped.status == 0, "\(skipped.stderrText)")
        #expect(try Self.listJSON(sandbox, key).compactMap { $0["name"] as? String } == ["small"])
        #expect(try sandbox.run(["get", "small"], environment: environment).stdoutText == "fine")
        // No gpg of the import is left running.
        let gpgs = try Self.shell(["pgrep", "-f", "gpg -d --quiet --yes --compress-algo=none --no-encrypt-to -- " + store], environment: environment)
        #expect(gpgs.1.isEmpty, "a gpg is still running: \(String(decoding: gpgs.1, as: UTF8.self))")
    }

    @Test(.enabled(if: ImportCommandTests.hasPass))
    func aStoreGpgCannotDecryptImportsNothing() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let store = sandbox.path("store")
        try FileManager.default.createDirectory(atPath: store + "/sub", withIntermediateDirectories: true)
        FileManager.default.createFile(atPath: store + "/sub/broken.gpg", contents: Data("not gpg data".utf8))
        FileManager.default.createFile(atPath: store + "/.gpg-id", contents: Data("x\n".utf8))
        let gnupg = sandbox.path("gnupg")
        try FileManager.default.createDirectory(atPath: gnupg, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        let environment = key.merging(["GNUPGHOME": gnupg]) { _, new in new }
        defer { _ = try? Self.shell(["gpgconf", "--kill", "gpg-agent"], environment: sandbox.environment.merging(environment) { _, new in new }) }
        let result = try sandbox.run(["import", "--from", "pass", store], environment: environment)
        #expect(result.status == 77, "\(result.stderrText)")
        #expect(result.stderrText.contains("gpg could not decrypt 'sub/broken'"))
        #expect(try Self.listJSON(sandbox, key).isEmpty)
        #expect(try sandbox.run(["import", "--from", "pass", sandbox.path("no-store")], environment: environment).status == 66)
    }

    // MARK: KeePassXC

    @Test func theCommittedKeePassXCExportIsImported() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let result = try sandbox.run(["import", "--from", "keepassxc-csv", try Self.fixture("keepassxc-export.csv"), "--json"], environment: key)
        #expect(result.status == 0, "\(result.stderrText)")
        var expected: [String: (secret: String, label: String?)] = [:]
        for entry in try Self.expectedEntries("keepassxc-export.expected.json") where !entry.secret.isEmpty {
            expected[entry.name] = (entry.secret, entry.label)   // the last of a name wins
        }
        let listed = try Self.listJSON(sandbox, key)
        #expect(Set(listed.compactMap { $0["name"] as? String }) == Set(expected.keys))
        for item in listed {
            let name = try #require(item["name"] as? String)
            #expect((item["label"] as? String) == expected[name]?.label, "\(name)")
            #expect(try sandbox.run(["get", name], environment: key).stdoutText == expected[name]?.secret, "\(name)")
        }
        let report = try #require(try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any])
        #expect(report["skipped"] as? [String] == ["Work/Dup", "Empty Password"])
        #expect((report["invalid"] as? [String])?.isEmpty == true)
    }

    @Test(.enabled(if: ImportCommandTests.hasKeePassXC))
    func anExportTheRealKeePassXCMakesNowIsImported() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let database = sandbox.path("test.kdbx"), master = "fake-master-pw"
        let environment = sandbox.environment
        try #require(try Self.shell(["keepassxc-cli", "db-create", "-p", "-t", "100", database], stdin: "\(master)\n\(master)\n",
                                    environment: environment).0 == 0)
        try #require(try Self.shell(["keepassxc-cli", "mkdir", database, "Cloud"], stdin: "\(master)\n", environment: environment).0 == 0)
        try #require(try Self.shell(["keepassxc-cli", "add", "-u", "deploy", "--url", "https://cloud.example.test", "-p", database, "Cloud/API, \"prod\""],
                                    stdin: "\(master)\nk,e\"y-123\n", environment: environment).0 == 0)
        let (exported, csv) = try Self.shell(["keepassxc-cli", "export", "--format", "csv", database], stdin: "\(master)\n", environment: environment)
        try #require(exported == 0)
        let export = sandbox.privateFile("export.csv", String(decoding: csv, as: UTF8.self))
        let result = try sandbox.run(["import", "--from", "keepassxc-csv", export], environment: key)
        #expect(result.status == 0, "\(result.stderrText)")
        #expect(try sandbox.run(["get", "Cloud/API, \"prod\""], environment: key).stdoutText == "k,e\"y-123")
        #expect(try Self.listJSON(sandbox, key).first?["label"] as? String == "deploy @ https://cloud.example.test")
    }

    // MARK: Bitwarden

    @Test func aBitwardenExportImportsItsLogins() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let result = try sandbox.run(["import", "--from", "bitwarden-json", try Self.fixture("bitwarden-export.json")], environment: key)
        #expect(result.status == 0, "\(result.stderrText)")
        let expected = try Self.expectedEntries("bitwarden-export.expected.json")
        #expect(!expected.isEmpty)
        for entry in expected {
            #expect(try sandbox.run(["get", entry.name], environment: key).stdoutText == entry.secret, "\(entry.name)")
        }
        let labels = Dictionary(uniqueKeysWithValues: try Self.listJSON(sandbox, key).map { ($0["name"] as? String ?? "", $0["label"] as? String) })
        for entry in expected { #expect(labels[entry.name] == entry.label, "\(entry.name)") }
        // The one login with a TOTP seed also gives a totp entry of its own (TOTPCommandTests).
        #expect(labels.count == expected.count + 1, "notes, cards, identities and logins without a password are not imported")
        #expect(labels.keys.contains("Café ☕ Ñandú/totp"))
        #expect(result.stderrText.contains("not a login (a card)"))
    }

    @Test func anEncryptedBitwardenExportIsRefused() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let result = try sandbox.run(["import", "--from", "bitwarden-json", try Self.fixture("bitwarden-encrypted-export.json")], environment: key)
        #expect(result.status == 64)
        #expect(result.stderrText.contains("encrypted Bitwarden export"))
        #expect(try Self.listJSON(sandbox, key).isEmpty)
    }

    // MARK: One transaction

    @Test func anInvalidNameStopsTheWholeImportUnlessSkipped() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let source = sandbox.privateFile("export.json", """
            {"encrypted": false, "folders": [], "items": [
              {"type": 1, "name": "good", "folderId": null, "login": {"username": "u", "password": "good-pw"}},
              {"type": 1, "name": "bad\\u001b[31mname", "folderId": null, "login": {"username": "u", "password": "x1"}},
              {"type": 1, "name": "cafe\\u0301", "folderId": null, "login": {"username": "u", "password": "x2"}},
              {"type": 1, "name": "\(String(repeating: "n", count: 300))", "folderId": null, "login": {"username": "u", "password": "x3"}}
            ]}
            """)
        let stopped = try sandbox.run(["import", "--from", "bitwarden-json", source, "--json"], environment: key)
        #expect(stopped.status == 64)
        #expect(stopped.stderrText.contains("3 names are not valid"))
        #expect(stopped.stderrText.contains("control characters"))
        #expect(stopped.stderrText.contains("normal form C"))
        #expect(!stopped.stderrText.contains("\u{1b}"), "a name is escaped for the terminal")
        let report = try #require(try JSONSerialization.jsonObject(with: stopped.stdout) as? [String: Any])
        #expect((report["invalid"] as? [String])?.count == 3)
        #expect(report["written"] as? Bool == false)
        #expect(try Self.listJSON(sandbox, key).isEmpty, "nothing was written")

        let skipped = try sandbox.run(["import", "--from", "bitwarden-json", source, "--skip-invalid"], environment: key)
        #expect(skipped.status == 0, "\(skipped.stderrText)")
        #expect(try Self.listJSON(sandbox, key).compactMap { $0["name"] as? String } == ["good"])
    }

    @Test func existingNamesAreKeptUnlessReplaced() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        #expect(try sandbox.run(["add", "API"], stdin: Data(text: "mine"), environment: key).status == 0)
        let source = sandbox.privateFile("secrets.env", "API=theirs\nNEW=fresh # comment\nAPI_URL=\"https://x.test\"\n")
        let dry = try sandbox.run(["import", "--from", "dotenv", source, "--dry-run", "--json"], environment: key)
        #expect(dry.status == 0)
        let dryReport = try #require(try JSONSerialization.jsonObject(with: dry.stdout) as? [String: Any])
        #expect(dryReport["imported"] as? [String] == ["NEW", "API_URL"])
        #expect(dryReport["skipped"] as? [String] == ["API"])
        #expect(dryReport["dryRun"] as? Bool == true)
        #expect(try Self.listJSON(sandbox, key).count == 1, "a dry run writes nothing")

        let kept = try sandbox.run(["import", "--from", "dotenv", source], environment: key)
        #expect(kept.status == 0)
        #expect(try sandbox.run(["get", "API"], environment: key).stdoutText == "mine")
        #expect(try sandbox.run(["get", "NEW"], environment: key).stdoutText == "fresh")

        let replaced = try sandbox.run(["import", "--from", "dotenv", source, "--replace", "--json"], environment: key)
        #expect(replaced.status == 0)
        let report = try #require(try JSONSerialization.jsonObject(with: replaced.stdout) as? [String: Any])
        #expect(Set(report["replaced"] as? [String] ?? []) == ["API", "NEW", "API_URL"])
        #expect(try sandbox.run(["get", "API"], environment: key).stdoutText == "theirs")
        #expect(try String(contentsOfFile: source, encoding: .utf8).hasPrefix("API=theirs"), "the source is never changed")
    }

    @Test func anUnknownFormatOrMissingSourceIsRefused() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        #expect(try sandbox.run(["import", "--from", "lastpass", sandbox.path("x")], environment: key).status == 64)
        #expect(try sandbox.run(["import", "--from", "dotenv", sandbox.path("absent.env")], environment: key).status == 66)
        let notCSV = sandbox.privateFile("x.csv", "\"Title\",\"Password\"\n\"a\",\"b\"\n")
        let wrongHeader = try sandbox.run(["import", "--from", "keepassxc-csv", notCSV], environment: key)
        #expect(wrongHeader.status == 64)
        #expect(wrongHeader.stderrText.contains("not a KeePassXC CSV export"))
        let unclosed = sandbox.privateFile("y.csv", "\"Group\",\"Title\",\"Username\",\"Password\",\"URL\"\n\"R\",\"a\",\"u\",\"unclosed,\"\"\n")
        #expect(try sandbox.run(["import", "--from", "keepassxc-csv", unclosed], environment: key).status == 64)
    }

    @Test func nfcAndNfdSpellingsAreTwoNamesAndTheNfdOneIsInvalid() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let source = sandbox.privateFile("names.env", "\u{E9}=nfc\ne\u{301}=nfd\n")
        let result = try sandbox.run(["import", "--from", "dotenv", source, "--skip-invalid", "--json"], environment: key)
        #expect(result.status == 0, "\(result.stderrText)")
        let report = try #require(try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any])
        #expect((report["imported"] as? [String])?.map { Array($0.utf8) } == [Array("\u{E9}".utf8)])
        #expect((report["invalid"] as? [String])?.count == 1)
        #expect((report["skipped"] as? [String])?.isEmpty == true)
    }
}
