import Foundation
import Testing
import TestScheduling

/// `vault audit` (issue 39, point 4) against a real agent: what its requests leave in the log,
/// `--verify` on an intact and on an edited log, and what needs the key.
@Suite(.blockingWork, .serialized) struct AuditCommandTests {
    static func records(_ world: AgentCommandTests.World, _ extra: [String] = []) throws -> [[String: Any]] {
        let result = try world.vault(["audit", "--json"] + extra)
        #expect(result.status == 0, "\(result.stderrText)")
        return (try JSONSerialization.jsonObject(with: result.stdout) as? [[String: Any]]) ?? []
    }

    @Test func agentRequestsAreRecordedAndTheChainVerifies() throws {
        let world = try AgentCommandTests.World()
        try world.unlock()
        #expect(try world.vault(["get", "api"]).status == 0)
        #expect(try world.vault(["list"]).status == 0)
        #expect(try world.vault(["add", "second"], stdin: Data("second-secret-value".utf8)).status == 0)
        #expect(try world.vault(["rm", "second"]).status == 0)

        let records = try Self.records(world)
        // (Refusals and their rules: AuditLogTests; the command refuses reserved names before asking the agent.)
        #expect(records.map { $0["operation"] as? String } == ["get", "list", "add", "rm"])
        #expect(records.map { $0["entry"] as? String } == ["api", nil, "second", "second"])
        #expect(records.map { $0["decision"] as? String } == ["allowed", "allowed", "allowed", "allowed"])
        let caller = try #require(records.first?["caller"] as? [String: Any])
        #expect(caller["personality"] as? String == "vault")
        #expect((caller["executables"] as? [String])?.isEmpty == false)
        #expect(records.allSatisfy { Set($0.keys) == ["seq", "time", "operation", "entry", "owner", "caller", "decision", "rule"] })

        let folder = world.sandbox.path(".local/state/vault/audit")
        let names = try FileManager.default.contentsOfDirectory(atPath: folder)
        let log = try #require(names.first { $0.hasSuffix(".log") })
        let bytes = try Data(contentsOf: URL(fileURLWithPath: folder + "/" + log))
        #expect(bytes.range(of: Data(AgentCommandTests.secret.utf8)) == nil && bytes.range(of: Data("second-secret-value".utf8)) == nil)

        let text = try world.vault(["audit"])
        #expect(text.status == 0 && text.stdoutText.contains("allowed") && text.stdoutText.contains("second"))
        #expect(try Self.records(world, ["--since", "1h"]).count == 4)

        let intact = try world.vault(["audit", "--verify"], environment: ["VAULT_PASSPHRASE": AgentCommandTests.passphrase])
        #expect(intact.status == 0, "\(intact.stderrText)")
        #expect(intact.stdoutText.contains("intact: 4 records"))

        // One byte edited in record 2: 65, naming it.
        var lines = try String(contentsOfFile: folder + "/" + log, encoding: .utf8).split(separator: "\n").map(String.init)
        lines[1] = lines[1].replacingOccurrences(of: "\"list\"", with: "\"lisT\"")
        try (lines.joined(separator: "\n") + "\n").write(toFile: folder + "/" + log, atomically: false, encoding: .utf8)
        let edited = try world.vault(["audit", "--verify"], environment: ["VAULT_PASSPHRASE": AgentCommandTests.passphrase])
        #expect(edited.status == 65)
        #expect(edited.stderrText.contains("the audit log failed its check at record 2 ("))
        #expect(edited.stderrText.contains("the vault itself is not affected"))
        #expect(!edited.stderrText.contains("restore it from a backup"))

        // Verifying needs the vault's key; a wrong one is refused before any record is judged.
        let wrong = try world.vault(["audit", "--verify"], environment: ["VAULT_PASSPHRASE": "not the passphrase at all"])
        #expect(wrong.status == 77)
        _ = world.stop()
    }

    /// Review of issue 39, finding 1, through the real agent and binary: a log cut at its tail with
    /// its head deleted does not verify after the agent's next write; the head-lost record names why.
    @Test func aCutLogWithoutItsHeadFailsVerifyAfterTheAgentsNextWrite() throws {
        let world = try AgentCommandTests.World()
        try world.unlock()
        for _ in 0..<3 { #expect(try world.vault(["get", "api"]).status == 0) }
        let folder = world.sandbox.path(".local/state/vault/audit")
        let names = try FileManager.default.contentsOfDirectory(atPath: folder)
        let log = try #require(names.first { $0.hasSuffix(".log") })
        let head = try #require(names.first { $0.hasSuffix(".head") })
        let lines = try String(contentsOfFile: folder + "/" + log, encoding: .utf8).split(separator: "\n").map(String.init)
        try (lines.dropLast().joined(separator: "\n") + "\n").write(toFile: folder + "/" + log, atomically: false, encoding: .utf8)
        try FileManager.default.removeItem(atPath: folder + "/" + head)
        #expect(try world.vault(["get", "api"]).status == 0, "the agent goes on recording")

        let records = try Self.records(world)
        #expect(records.map { $0["operation"] as? String } == ["get", "get", "head-lost", "get"])
        let verify = try world.vault(["audit", "--verify"], environment: ["VAULT_PASSPHRASE": AgentCommandTests.passphrase])
        #expect(verify.status == 65, "\(verify.stdoutText)\(verify.stderrText)")
        #expect(verify.stderrText.contains("the audit log failed its check at record 3 (") && verify.stderrText.contains("head was missing"))
        _ = world.stop()
    }
}
