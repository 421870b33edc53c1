import Foundation
import Testing
import TestScheduling

/// `vault add --kind totp`, `vault totp`, and TOTP seeds brought in by `vault import`, against the
/// built binary. The seed (base32 of RFC 6238's "12345678901234567890") never shows in any output.
@Suite(.blockingWork) struct TOTPCommandTests {
    static let seed = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"
    static let uri = "otpauth://totp/ACME:alice?secret=\(seed)&issuer=ACME&digits=8\n"

    static func expectNoSeed(_ result: CLIResult, sourceLocation: SourceLocation = #_sourceLocation) {
        for fragment in [seed, String(seed.prefix(12)), seed.lowercased().prefix(12).description] {
            #expect(!result.stdoutText.contains(fragment) && !result.stderrText.contains(fragment), sourceLocation: sourceLocation)
        }
    }

    @Test func aStoredURIGivesRFC6238CodesAsTextAndJSON() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let added = try sandbox.run(["add", "acme", "--kind", "totp"], stdin: Data(Self.uri.utf8), environment: key)
        #expect(added.status == 0, "\(added.stderrText)")
        Self.expectNoSeed(added)
        // RFC 6238 Appendix B, SHA1 at 1111111109 (2005-03-18T01:58:29Z): 07081804.
        let text = try sandbox.run(["totp", "acme", "--at", "2005-03-18T01:58:29Z"], environment: key)
        #expect(text.status == 0, "\(text.stderrText)")
        #expect(text.stdoutText == "07081804\n")
        Self.expectNoSeed(text)
        let json = try sandbox.run(["totp", "acme", "--at", "2005-03-18T03:58:29+02:00", "--json"], environment: key)
        #expect(json.status == 0, "\(json.stderrText)")
        let object = try #require(try JSONSerialization.jsonObject(with: json.stdout) as? [String: Any])
        #expect(Set(object.keys) == ["code", "validUntil"])
        #expect(object["code"] as? String == "07081804")
        #expect(object["validUntil"] as? String == "2005-03-18T01:58:30.000Z")
        Self.expectNoSeed(json)
        // Now: eight digits, whatever they are.
        let now = try sandbox.run(["totp", "acme"], environment: key)
        #expect(now.stdoutText.range(of: #"^[0-9]{8}\n$"#, options: .regularExpression) != nil)
        // The entry is listed with its kind; 'get', the explicit secret read, prints the URI as stored.
        #expect(try sandbox.run(["list", "--json"], environment: key).stdoutText.contains("\"totp\""))
        #expect(try sandbox.run(["get", "acme"], environment: key).stdoutText == Self.uri)
    }

    /// Malformed URIs, and the parameter each error must name.
    static let malformed: [(String, String)] = [
        ("https://example.test/?secret=\(seed)", "scheme"),
        ("otpauth://hotp/x?secret=\(seed)&counter=0", "hotp"),
        ("otpauth://totp/x?issuer=ACME", "secret"),
        ("otpauth://totp/x?secret=\(seed)0", "secret"),
        ("otpauth://totp/x?secret=\(seed)&digits=10", "digits"),
        ("otpauth://totp/x?secret=\(seed)&period=0", "period"),
        ("otpauth://totp/x?secret=\(seed)&algorithm=MD5", "algorithm"),
    ]

    @Test func aMalformedURIIsRefusedWith64NamingTheParameterAndNothingIsStored() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        for (uri, parameter) in Self.malformed {
            let result = try sandbox.run(["add", "bad", "--kind", "totp"], stdin: Data(uri.utf8), environment: key)
            #expect(result.status == 64, "\(parameter): \(result.stderrText)")
            #expect(result.stderrText.contains(parameter), "\(result.stderrText)")
            Self.expectNoSeed(result)
        }
        #expect(try sandbox.run(["list", "--json"], environment: key).stdoutText.trimmingCharacters(in: .whitespacesAndNewlines) == "[]")
    }

    @Test func totpRefusesABadTimeAnEntryOfAnotherKindAndAMissingEntry() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        #expect(try sandbox.run(["add", "acme", "--kind", "totp"], stdin: Data(Self.uri.utf8), environment: key).status == 0)
        for time in ["yesterday", "2026-13-01T00:00:00Z", "2026-01-01", "1969-12-31T23:59:59Z"] {
            let result = try sandbox.run(["totp", "acme", "--at", time], environment: key)
            #expect(result.status == 64, "\(time): \(result.stderrText)")
            #expect(result.stdout.isEmpty)
        }
        // A time whose step ends after the year 9999 (its validUntil could not be written): 64 naming --at.
        let late = try sandbox.run(["totp", "acme", "--at", "9999-12-31T23:59:50Z", "--json"], environment: key)
        #expect(late.status == 64, "\(late.stderrText)")
        #expect(late.stderrText.contains("--at") && late.stderrText.contains("9999"))
        #expect(late.stdout.isEmpty)
        #expect(try sandbox.run(["add", "plain"], stdin: Data("otpauth://totp/x?secret=\(Self.seed)".utf8), environment: key).status == 0)
        let other = try sandbox.run(["totp", "plain"], environment: key)
        #expect(other.status == 64)
        #expect(other.stderrText.contains("generic entry, not a totp one"))
        Self.expectNoSeed(other)
        #expect(try sandbox.run(["totp", "missing"], environment: key).status != 0)
    }

    @Test func theHelpAndCompletionKnowTheNewCommands() throws {
        let sandbox = try CLISandbox()
        defer { sandbox.cleanUp() }
        let help = try sandbox.run(["--help"])
        #expect(help.stdoutText.contains("totp") && help.stdoutText.contains("generate"))
        let completion = try sandbox.run(["--generate-completion-script", "bash"])
        for word in ["totp", "generate", "--at", "--charset", "--words", "--separator", "--generate"] {
            #expect(completion.stdoutText.contains(word), "\(word)")
        }
    }

    @Test func totpAndAddGenerateWorkThroughTheAgent() throws {
        let world = try AgentCommandTests.World()
        try world.unlock()
        let added = try world.vault(["add", "acme", "--kind", "totp"], stdin: Data(Self.uri.utf8))
        #expect(added.status == 0, "\(added.stderrText)")
        let code = try world.vault(["totp", "acme", "--at", "2005-03-18T01:58:29Z", "--json"])
        #expect(code.status == 0, "\(code.stderrText)")
        #expect(code.stdoutText.contains("\"07081804\""))
        let generated = try world.vault(["add", "db", "--generate", "--words", "5"])
        #expect(generated.status == 0 && generated.stdout.isEmpty, "\(generated.stderrText)")
        let secret = try world.vault(["get", "db"]).stdoutText
        #expect(secret.split(separator: "-").count >= 5)
        let log = world.stop()
        #expect(!log.stderrText.contains(String(Self.seed.prefix(12))) && !log.stderrText.contains(secret), "the agent never logs a secret")
        Self.expectNoSeed(code)
    }

    @Test(.enabled(if: PostgresCLI.shouldRun, "no PostgreSQL server (VAULT_POSTGRES_URL)"))
    func aTOTPEntryAndAGeneratedSecretWorkOnAPostgreSQLStore() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let store = ["--store", try PostgresCLI.requireURL(), "--store-name", PostgresCLI.freshStoreName()]
        #expect(try sandbox.run(["init"] + store, environment: key).status == 0)
        let added = try sandbox.run(["add", "acme", "--kind", "totp"] + store, stdin: Data(Self.uri.utf8), environment: key)
        #expect(added.status == 0, "\(added.stderrText)")
        let code = try sandbox.run(["totp", "acme", "--at", "2005-03-18T01:58:29Z"] + store, environment: key)
        #expect(code.stdoutText == "07081804\n", "\(code.stderrText)")
        #expect(try sandbox.run(["list", "--json"] + store, environment: key).stdoutText.contains("\"totp\""))
        let generated = try sandbox.run(["add", "db", "--generate", "--charset", "digits", "--length", "12"] + store, environment: key)
        #expect(generated.status == 0 && generated.stdout.isEmpty, "\(generated.stderrText)")
        let secret = try sandbox.run(["get", "db"] + store, environment: key).stdoutText
        #expect(secret.count == 12 && secret.allSatisfy(\.isNumber))
        #expect(try sandbox.run(["verify"] + store, environment: key).status == 0)
    }

    // MARK: import

    @Test(.enabled(if: ImportCommandTests.hasKeePassXC))
    func aRealKeePassXCExportKeepsItsTOTPSeedAsATOTPEntry() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        // keepassxc-cli cannot set an entry's TOTP, but it imports KeePass XML: one entry with the
        // `otp` attribute KeePassXC's own TOTP dialog writes, one with the legacy TOTP Seed/Settings.
        let xml = """
            <?xml version="1.0" encoding="utf-8" standalone="yes"?>
            <KeePassFile><Meta><Generator>vault tests</Generator></Meta><Root><Group>
             <UUID>AAAAAAAAAAAAAAAAAAAAAA==</UUID><Name>Root</Name>
             <Group><UUID>AAAAAAAAAAAAAAAAAAAAAQ==</UUID><Name>Work</Name>
              <Entry><UUID>AAAAAAAAAAAAAAAAAAAAAg==</UUID>
               <String><Key>Title</Key><Value>GitHub</Value></String>
               <String><Key>UserName</Key><Value>alice</Value></String>
               <String><Key>Password</Key><Value>fake-pw-1</Value></String>
               <String><Key>otp</Key><Value>otpauth://totp/GitHub:alice?secret=\(Self.seed)&amp;period=30&amp;digits=8&amp;issuer=GitHub</Value></String>
              </Entry>
              <Entry><UUID>AAAAAAAAAAAAAAAAAAAAAw==</UUID>
               <String><Key>Title</Key><Value>Legacy</Value></String>
               <String><Key>Password</Key><Value></Value></String>
               <String><Key>TOTP Seed</Key><Value>\(Self.seed)</Value></String>
               <String><Key>TOTP Settings</Key><Value>30;6</Value></String>
              </Entry>
             </Group>
            </Group></Root></KeePassFile>
            """
        let source = sandbox.privateFile("source.xml", xml)
        let database = sandbox.path("test.kdbx"), master = "fake-master-pw"
        try #require(try ImportCommandTests.shell(["keepassxc-cli", "import", "-p", source, database], stdin: "\(master)\n\(master)\n",
                                                  environment: sandbox.environment).0 == 0)
        let (exported, csv) = try ImportCommandTests.shell(["keepassxc-cli", "export", "--format", "csv", database], stdin: "\(master)\n",
                                                           environment: sandbox.environment)
        try #require(exported == 0)
        #expect(String(decoding: csv, as: UTF8.self).hasPrefix(#""Group","Title","Username","Password","URL","Notes","TOTP""#))
        let export = sandbox.privateFile("export.csv", String(decoding: csv, as: UTF8.self))
        let result = try sandbox.run(["import", "--from", "keepassxc-csv", export, "--json"], environment: key)
        #expect(result.status == 0, "\(result.stderrText)")
        Self.expectNoSeed(result)
        let report = try #require(try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any])
        #expect(Set(report["imported"] as? [String] ?? []) == ["Work/GitHub", "Work/GitHub/totp", "Work/Legacy/totp"])
        #expect(try sandbox.run(["totp", "Work/GitHub/totp", "--at", "2005-03-18T01:58:29Z"], environment: key).stdoutText == "07081804\n")
        #expect(try sandbox.run(["totp", "Work/Legacy/totp", "--at", "2005-03-18T01:58:29Z"], environment: key).stdoutText == "081804\n")
        #expect(try sandbox.run(["get", "Work/GitHub"], environment: key).stdoutText == "fake-pw-1")
    }

    @Test func bitwardenTOTPSeedsBecomeTOTPEntriesFromAURIOrABareSecret() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let items = [
            #"{"type": 1, "name": "Uri", "login": {"username": "u", "password": "p1", "totp": "otpauth://totp/Uri?secret=\#(Self.seed)&digits=8"}}"#,
            // Bitwarden also takes the bare key, in any case, with spaces; it means SHA1, 6 digits, 30 s.
            #"{"type": 1, "name": "Bare", "login": {"password": "p2", "totp": "gezd gnbv gy3t qojq gezd gnbv gy3t qojq"}}"#,
            #"{"type": 1, "name": "OnlyTOTP", "login": {"password": null, "totp": "\#(Self.seed)"}}"#,
            #"{"type": 1, "name": "Steam", "login": {"password": "p3", "totp": "steam://\#(Self.seed)"}}"#,
        ]
        let export = sandbox.privateFile("bitwarden.json", #"{"encrypted": false, "folders": [], "items": [\#(items.joined(separator: ","))]}"#)
        let result = try sandbox.run(["import", "--from", "bitwarden-json", export, "--json"], environment: key)
        #expect(result.status == 0, "\(result.stderrText)")
        Self.expectNoSeed(result)
        let report = try #require(try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any])
        #expect(Set(report["imported"] as? [String] ?? []) == ["Uri", "Uri/totp", "Bare", "Bare/totp", "OnlyTOTP/totp", "Steam"])
        #expect(Set(report["skipped"] as? [String] ?? []) == ["OnlyTOTP", "Steam/totp"])
        let at = ["--at", "2005-03-18T01:58:29Z"]
        #expect(try sandbox.run(["totp", "Uri/totp"] + at, environment: key).stdoutText == "07081804\n")
        #expect(try sandbox.run(["totp", "Bare/totp"] + at, environment: key).stdoutText == "081804\n")
        #expect(try sandbox.run(["totp", "OnlyTOTP/totp"] + at, environment: key).stdoutText == "081804\n")
        // The bare secret is stored as a URI with the defaults spelled out.
        #expect(try sandbox.run(["get", "Bare/totp"], environment: key).stdoutText
                == "otpauth://totp/Bare?secret=\(Self.seed)&algorithm=SHA1&digits=6&period=30")
    }

    @Test func aMalformedTOTPInAnExportStopsTheImportNamingTheParameter() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let export = sandbox.privateFile("bitwarden.json", #"""
            {"encrypted": false, "items": [{"type": 1, "name": "Bad", "login": {"password": "p", "totp": "otpauth://totp/x?secret=\#(Self.seed)&digits=4"}}]}
            """#)
        let result = try sandbox.run(["import", "--from", "bitwarden-json", export], environment: key)
        #expect(result.status == 64)
        #expect(result.stderrText.contains("Bad/totp") && result.stderrText.contains("digits"))
        Self.expectNoSeed(result)
        let skipped = try sandbox.run(["import", "--from", "bitwarden-json", export, "--skip-invalid"], environment: key)
        #expect(skipped.status == 0)
        #expect(try sandbox.run(["get", "Bad"], environment: key).stdoutText == "p")
    }
}
