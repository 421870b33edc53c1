import Foundation
import Testing
import TestScheduling

/// `vault add --attribute NAME=VALUE`, and the attributes in `vault inspect` (one escaped line each)
/// and in `inspect --json` / `list --json` (an `attributes` object): each command a new process, so
/// the attributes come back from the sealed file, the agent, or PostgreSQL.
@Suite(.blockingWork) struct EntryAttributesCommandTests {
    static func json(_ result: CLIResult) throws -> Any {
        try JSONSerialization.jsonObject(with: result.stdout)
    }

    @Test func addedAttributesAreShownByInspectAndListAndNeverStoredInTheClear() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let added = try sandbox.run(["add", "git", "--attribute", "xdg:schema=org.git.Password", "--attribute", "user=alice",
                                     "--attribute", "note=a=b\u{1B}[31m", "--attribute", "empty="],
                                    stdin: Data("pw".utf8), environment: key)
        #expect(added.status == 0, "\(added.stderrText)")
        #expect(try sandbox.run(["add", "plain"], stdin: Data("x".utf8), environment: key).status == 0)

        let inspected = try sandbox.run(["inspect", "git"], environment: key)
        #expect(inspected.status == 0, "\(inspected.stderrText)")
        let lines = inspected.stdoutText.split(separator: "\n").filter { $0.hasPrefix("attribute") }
        #expect(lines.count == 4, "\(inspected.stdoutText)")
        #expect(lines.first?.hasSuffix("empty =") == true, "sorted by name: \(lines)")
        #expect(inspected.stdoutText.contains("xdg:schema = org.git.Password"))
        #expect(inspected.stdoutText.contains("note = a=b"), "split at the first '='")
        #expect(!inspected.stdout.contains(Data([0x1B])), "a control character is escaped")

        let object = try #require(try Self.json(try sandbox.run(["inspect", "git", "--json"], environment: key)) as? [String: Any])
        let attributes = try #require(object["attributes"] as? [String: String])
        #expect(attributes == ["xdg:schema": "org.git.Password", "user": "alice", "note": "a=b\u{1B}[31m", "empty": ""])

        let listed = try #require(try Self.json(try sandbox.run(["list", "--json"], environment: key)) as? [[String: Any]])
        #expect(listed.first { $0["name"] as? String == "git" }?["attributes"] as? [String: String] == attributes)
        #expect((listed.first { $0["name"] as? String == "plain" }?["attributes"] as? [String: String]) == [:])

        let file = try Data(contentsOf: URL(fileURLWithPath: sandbox.vaultFile))
        for text in ["xdg:schema", "org.git.Password", "alice"] {
            #expect(!file.contains(Data(text.utf8)), "'\(text)' is in the vault file in the clear")
        }
    }

    @Test(arguments: [["--attribute", "novalue"], ["--attribute", "=v"], ["--attribute", "a=1", "--attribute", "a=2"]])
    func malformedAttributeOptionsAreUsageErrors(arguments: [String]) throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let result = try sandbox.run(["add", "e"] + arguments, stdin: Data("x".utf8), environment: key)
        #expect(result.status == 64, "\(arguments): \(result.stderrText)")
        #expect(result.stderrText.contains("--attribute"))
        #expect(try sandbox.run(["get", "e"], environment: key).status == 66, "nothing stored")
    }

    @Test func attributesOverTheLimitsAreRefusedAndNothingIsStored() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let long = try sandbox.run(["add", "e", "--attribute", "n=" + String(repeating: "v", count: 1025)],
                                   stdin: Data("x".utf8), environment: key)
        #expect(long.status != 0)
        #expect(long.stderrText.contains("1025 bytes"), "\(long.stderrText)")
        let many = (0...64).flatMap { ["--attribute", "n\($0)=v"] }
        let tooMany = try sandbox.run(["add", "e"] + many, stdin: Data("x".utf8), environment: key)
        #expect(tooMany.status == long.status)
        #expect(tooMany.stderrText.contains("65 attributes"), "\(tooMany.stderrText)")
        #expect(try sandbox.run(["get", "e"], environment: key).status == 66, "nothing stored")
    }

    @Test func aVersion2VaultAsksForUpgradeFormatFirst() throws {
        let (sandbox, key) = try UpgradeFormatCommandTests.sandboxWithVersion2Vault()
        defer { sandbox.cleanUp() }
        let refused = try sandbox.run(["add", "git", "--attribute", "user=alice"], stdin: Data("pw".utf8), environment: key)
        #expect(refused.status != 0)
        #expect(refused.stderrText.contains("vault upgrade-format"), "\(refused.stderrText)")
        #expect(try sandbox.run(["get", "git"], environment: key).status == 66)
        #expect(try UpgradeFormatCommandTests.majorVersion(sandbox) == 2, "the file stays version 2")
        #expect(try sandbox.run(["upgrade-format"], environment: key).status == 0)
        #expect(try sandbox.run(["add", "git", "--attribute", "user=alice"], stdin: Data("pw".utf8), environment: key).status == 0)
    }

    @Test func attributesTravelThroughTheAgent() throws {
        let world = try AgentCommandTests.World()
        try world.unlock()
        let added = try world.vault(["add", "git", "--attribute", "xdg:schema=org.git.Password", "--attribute", "server=example.com"],
                                    stdin: Data("pw".utf8))
        #expect(added.status == 0, "\(added.stderrText)")
        let expected = ["xdg:schema": "org.git.Password", "server": "example.com"]
        let viaAgent = try #require(try Self.json(try world.vault(["inspect", "git", "--json"])) as? [String: Any])
        #expect(viaAgent["attributes"] as? [String: String] == expected)
        let listed = try #require(try Self.json(try world.vault(["list", "--json"])) as? [[String: Any]])
        #expect(listed.first { $0["name"] as? String == "git" }?["attributes"] as? [String: String] == expected)
        // What the agent wrote is in the file.
        let direct = try world.vault(["inspect", "git", "--json", "--no-agent"], environment: ["VAULT_PASSPHRASE": AgentCommandTests.passphrase])
        #expect((try Self.json(direct) as? [String: Any])?["attributes"] as? [String: String] == expected, "\(direct.stderrText)")
        #expect(world.stop().status == 0)
    }

    @Test(.enabled(if: PostgresCLI.shouldRun, "no PostgreSQL server (VAULT_POSTGRES_URL)"))
    func attributesRoundTripThroughPostgreSQL() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let store = ["--store", try PostgresCLI.requireURL(), "--store-name", PostgresCLI.freshStoreName()]
        #expect(try sandbox.run(["init"] + store, environment: key).status == 0)
        let added = try sandbox.run(["add", "git", "--attribute", "user=alice", "--attribute", "server=example.com"] + store,
                                    stdin: Data("s3cret".utf8), environment: key)
        #expect(added.status == 0, "\(added.stderrText)")
        #expect(try sandbox.run(["add", "plain"] + store, stdin: Data("x".utf8), environment: key).status == 0)
        let object = try #require(try Self.json(try sandbox.run(["inspect", "git", "--json"] + store, environment: key)) as? [String: Any])
        #expect(object["attributes"] as? [String: String] == ["user": "alice", "server": "example.com"])
        #expect(try sandbox.run(["get", "git"] + store, environment: key).stdoutText == "s3cret", "the secret ends before the attributes")
        #expect(try sandbox.run(["get", "plain"] + store, environment: key).stdoutText == "x")
        let verified = try sandbox.run(["verify"] + store, environment: key)
        #expect(verified.status == 0, "\(verified.stderrText)")
    }

    @Test(.enabled(if: PostgresCLI.shouldRun, "no PostgreSQL server (VAULT_POSTGRES_URL)"))
    func migrateStoreKeepsTheAttributesBothWays() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let url = try PostgresCLI.requireURL()
        let storeName = PostgresCLI.freshStoreName()
        let expected = ["xdg:schema": "org.git.Password", "user": "alice"]
        #expect(try sandbox.run(["add", "git", "--attribute", "xdg:schema=org.git.Password", "--attribute", "user=alice"],
                                stdin: Data("pw".utf8), environment: key).status == 0)
        let toPostgres = try sandbox.run(["migrate-store", "--to", url, "--to-store-name", storeName], environment: key)
        #expect(toPostgres.status == 0, "\(toPostgres.stderrText)")
        let store = ["--store", url, "--store-name", storeName]
        let onPostgres = try #require(try Self.json(try sandbox.run(["inspect", "git", "--json"] + store, environment: key)) as? [String: Any])
        #expect(onPostgres["attributes"] as? [String: String] == expected)
        let back = sandbox.path("back")
        let fromPostgres = try sandbox.run(["migrate-store"] + store + ["--to", "file", "--vault", back], environment: key)
        #expect(fromPostgres.status == 0, "\(fromPostgres.stderrText)")
        let inFile = try #require(try Self.json(try sandbox.run(["inspect", "git", "--json", "--vault", back], environment: key)) as? [String: Any])
        #expect(inFile["attributes"] as? [String: String] == expected)
    }
}
