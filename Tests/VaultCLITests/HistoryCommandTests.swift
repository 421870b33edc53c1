import Foundation
import Testing
import TestScheduling

/// `vault history` and `vault restore` (issue 39, point 3) through the real binary.
@Suite(.blockingWork) struct HistoryCommandTests {
    @Test func historyListsVersionsAndRestoreBringsOneBack() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        #expect(try sandbox.run(["add", "api"], stdin: Data("first-secret".utf8), environment: key).status == 0)
        #expect(try sandbox.run(["add", "api", "--replace"], stdin: Data("second".utf8), environment: key).status == 0)
        #expect(try sandbox.run(["rm", "api"], environment: key).status == 0)

        let listed = try sandbox.run(["list", "--json"], environment: key)
        #expect(!listed.stdoutText.contains("api"), "an earlier version is never an entry")
        #expect(try sandbox.run(["get", "api"], environment: key).status == 66)

        let json = try sandbox.run(["history", "api", "--json"], environment: key)
        #expect(json.status == 0, "\(json.stderrText)")
        let object = try #require(try JSONSerialization.jsonObject(with: json.stdout) as? [String: Any])
        #expect(object["name"] as? String == "api" && object["owner"] as? String == "" && object["limit"] as? Int == 10)
        let versions = try #require(object["versions"] as? [[String: Any]])
        #expect(versions.map { $0["version"] as? Int } == [2, 1])
        #expect(versions.map { $0["size"] as? Int } == [6, 12])
        #expect(versions.map { $0["writer"] as? String } == ["add", "add"])
        #expect(versions.allSatisfy { $0["current"] as? Bool == false && $0["time"] is String && $0["replacedAt"] is String })
        #expect(versions.allSatisfy { Set($0.keys) == ["version", "time", "replacedAt", "size", "writer", "kind", "current"] })
        #expect(!json.stdout.contains(Data("first-secret".utf8)) && !json.stdout.contains(Data("second".utf8)))

        let restored = try sandbox.run(["restore", "api", "--version", "1"], environment: key)
        #expect(restored.status == 0, "\(restored.stderrText)")
        #expect(try sandbox.run(["get", "api"], environment: key).stdout == Data("first-secret".utf8))
        let text = try sandbox.run(["history", "api"], environment: key)
        #expect(text.stdoutText.contains("3 (current)") && text.stdoutText.contains("restore of version 1"))

        #expect(try sandbox.run(["restore", "api", "--version", "9"], environment: key).status == 66)
        #expect(try sandbox.run(["restore", "api", "--version", "3"], environment: key).status == 64)
        #expect(try sandbox.run(["history", "nothing"], environment: key).status == 66)
    }

    @Test func theLimitIsSetForTheVaultAndBounded() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        #expect(try sandbox.run(["history", "--limit", "2"], environment: key).status == 0)
        for value in ["a", "b", "c", "d"] {
            #expect(try sandbox.run(["add", "k", "--replace"], stdin: Data(value.utf8), environment: key).status == 0)
        }
        let json = try sandbox.run(["history", "k", "--json"], environment: key)
        let object = try #require(try JSONSerialization.jsonObject(with: json.stdout) as? [String: Any])
        #expect(object["limit"] as? Int == 2)
        #expect((object["versions"] as? [[String: Any]])?.map { $0["version"] as? Int } == [4, 3, 2])
        #expect(try sandbox.run(["history", "--limit", "101"], environment: key).status == 64)
        #expect(try sandbox.run(["history"], environment: key).status == 64, "NAME or --limit")
        #expect(try sandbox.run(["history", "k", "--limit", "3"], environment: key).status == 64)
    }

    /// The documented way back to a file the release before history reads (docs/CLI.md, "History"):
    /// `history --limit 0` drops every kept version and writer record, `history --limit 10` then
    /// leaves nothing for the section to say, so the file is written without it (header flags 0).
    @Test func theDowngradePathWritesAFileWithoutTheHistorySection() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        func flags() throws -> UInt16 {
            let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: sandbox.vaultFile)))
            return UInt16(bytes[10]) << 8 | UInt16(bytes[11])
        }
        #expect(try sandbox.run(["add", "api"], stdin: Data("one".utf8), environment: key).status == 0)
        #expect(try flags() == 1, "one plain add records its writer: the file carries the history section")
        #expect(try sandbox.run(["add", "api", "--replace"], stdin: Data("two".utf8), environment: key).status == 0)
        #expect(try sandbox.run(["history", "--limit", "0"], environment: key).status == 0)
        #expect(try flags() == 1, "limit 0 is itself kept in the section")
        #expect(try sandbox.run(["add", "other"], stdin: Data("x".utf8), environment: key).status == 0)
        let history = try sandbox.run(["history", "api", "--json"], environment: key)
        let object = try #require(try JSONSerialization.jsonObject(with: history.stdout) as? [String: Any])
        #expect((object["versions"] as? [[String: Any]])?.map { $0["writer"] is NSNull } == [true], "no writer records at limit 0")
        #expect(try sandbox.run(["history", "--limit", "10"], environment: key).status == 0)
        #expect(try flags() == 0, "nothing for the section to say: the file is written as before history")
        #expect(try sandbox.run(["get", "api"], environment: key).stdout == Data("two".utf8))
    }

    @Test func aWrongKeyReadsNoHistory() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        #expect(try sandbox.run(["add", "api"], stdin: Data("one".utf8), environment: key).status == 0)
        #expect(try sandbox.run(["add", "api", "--replace"], stdin: Data("two".utf8), environment: key).status == 0)
        let other = try sandbox.keyFile("bob.key")
        let wrong = try sandbox.run(["history", "api", "--json"], environment: ["VAULT_KEY_FILE": other])
        #expect(wrong.status == 77)
        #expect(wrong.stdout.isEmpty)
    }
}
