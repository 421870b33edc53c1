import Foundation
import Testing
@testable import CredentialVault
import VaultCrypto

/// The agent's audit trail (issue 39, point 4): one chained record per entry request, written
/// before the request is carried out; `AuditLogReader.verify` finds any edit, removal, reordering
/// or cut tail, naming the first bad record.
@Suite struct AuditLogTests {
    /// Refuses every operation on "private-key", as a rules file would.
    struct PrivateRule: AgentAccessPolicy {
        func check(_ operation: AgentOperation, entry: (name: String, owner: String)) throws {
            if entry.name == "private-key" { throw VaultError(.deniedByRule, "rule 2 (deny private-key) refuses \(operation)") }
        }
        func lists(_ entry: (name: String, owner: String)) -> Bool { entry.name != "private-key" }
    }

    static let caller = AgentRequester(personality: "git", executables: ["/usr/bin/git", "/usr/bin/bash"], unit: "session-2.scope",
                                       userUnit: nil, pid: 4242, identified: true)

    /// A vault, a handler that audits into `audit/`, unlocked.
    struct World {
        let temp: TemporaryDirectory
        let directory: String
        let auditFolder: String
        let key: VaultKey
        let store: SecretStore
        let handler: AgentRequestHandler

        init(limits: AuditLog.Limits = .standard) throws {
            temp = try TemporaryDirectory()
            directory = temp.child("vault")
            auditFolder = temp.child("state/vault/audit")
            key = try Fixtures.keyFile("alice.key", in: temp)
            store = try SecretStore.create(in: directory, key: key, options: .testing())
            try store.put(NewEntry(name: "api", secret: secret("api-secret-value")))
            try store.put(NewEntry(name: "private-key", secret: secret("private-key-value")))
            handler = AgentRequestHandler(socketPath: "/run/test/agent.sock", idleTimeout: .seconds(900), maximumLifetime: .seconds(28_800),
                                          log: { _ in }, open: { try SecretStore.open(in: $0, key: $1, options: .testing()) },
                                          audit: AgentAudit(directory: auditFolder, limits: limits))
            if case let .refused(error) = handler.answer(.unlock(directory: directory, key: key)) { throw error }
        }

        var vaultID: String { store.vaultID }
        var logPath: String { auditFolder + "/\(vaultID).log" }

        func verify() throws -> AuditLogReader.Verification {
            try AuditLogReader.verify(directory: auditFolder, vaultID: vaultID, key: try store.auditKey())
        }

        func records() throws -> [[String: JSONValue]] {
            try AuditLogReader.read(directory: auditFolder, vaultID: vaultID).map { line in
                guard case let .object(fields) = line.record else { return [:] }
                return fields
            }
        }

        /// Runs a few requests as `caller`: get, list, add, rm, and a refused get.
        func exercise() {
            _ = handler.answer(.get(directory: directory, name: "api", owner: ""), policy: PrivateRule(), requester: caller)
            _ = handler.answer(.list(directory: directory, owner: nil), policy: PrivateRule(), requester: caller)
            _ = handler.answer(.add(directory: directory, entries: [NewEntry(name: "new", secret: secret("new-secret-value"))], replace: false),
                               policy: PrivateRule(), requester: caller)
            _ = handler.answer(.remove(directory: directory, name: "new", owner: ""), policy: PrivateRule(), requester: caller)
            _ = handler.answer(.get(directory: directory, name: "private-key", owner: ""), policy: PrivateRule(), requester: caller)
        }

        func lines() throws -> [String] {
            try String(contentsOfFile: logPath, encoding: .utf8).split(separator: "\n").map(String.init)
        }

        func write(lines: [String]) throws {
            try (lines.joined(separator: "\n") + "\n").write(toFile: logPath, atomically: false, encoding: .utf8)
        }
    }

    static func text(_ value: JSONValue?) -> String? {
        if case let .string(text)? = value { return text }
        return nil
    }

    @Test func everyEntryRequestIsRecordedWithItsCallerAndDecisionAndNoValue() throws {
        let world = try World()
        defer { world.temp.cleanUp() }
        world.exercise()
        _ = world.handler.answer(.get(directory: world.directory, name: "session.oauth-client-secret", owner: ""), requester: Self.caller)

        let records = try world.records()
        #expect(records.map { Self.text($0["operation"]) } == ["get", "list", "add", "rm", "get", "get"])
        #expect(records.map { Self.text($0["entry"]) } == ["api", nil, "new", "new", "private-key", "session.oauth-client-secret"])
        #expect(records.map { Self.text($0["decision"]) } == ["allowed", "allowed", "allowed", "allowed", "refused", "refused"])
        #expect(Self.text(records[4]["rule"])?.contains("rule 2 (deny private-key)") == true)
        #expect(Self.text(records[5]["rule"])?.contains("reserved") == true)
        guard case let .object(caller)? = records[0]["caller"] else { Issue.record("no caller"); return }
        #expect(Self.text(caller["personality"]) == "git")
        #expect(caller["executables"] == .array([.string("/usr/bin/git"), .string("/usr/bin/bash")]))
        #expect(Self.text(caller["unit"]) == "session-2.scope")
        #expect(records.map { $0["seq"] } == (1...6).map { .integer(Int128($0)) })

        // No value ever reaches the log.
        let bytes = try Data(contentsOf: URL(fileURLWithPath: world.logPath))
        for value in ["api-secret-value", "private-key-value", "new-secret-value"] {
            #expect(bytes.range(of: Data(value.utf8)) == nil, "\(value) in the log")
        }
        // Private files in a private folder.
        let folder = try FileManager.default.attributesOfItem(atPath: world.auditFolder)
        #expect((folder[.posixPermissions] as? Int) == 0o700)
        for name in ["\(world.vaultID).log", "\(world.vaultID).head"] {
            let file = try FileManager.default.attributesOfItem(atPath: world.auditFolder + "/" + name)
            #expect((file[.posixPermissions] as? Int) == 0o600)
        }
        let verified = try world.verify()
        #expect(verified.recordsChecked == 6 && verified.firstSequence == 1 && !verified.startsAfterRotation)
    }

    @Test func aWriteThroughTheAgentNamesItsCallerInTheEntrysHistory() throws {
        let world = try World()
        defer { world.temp.cleanUp() }
        _ = world.handler.answer(.add(directory: world.directory, entries: [NewEntry(name: "api", secret: secret("replaced"))], replace: true),
                                 requester: Self.caller)
        _ = world.handler.answer(.remove(directory: world.directory, name: "api", owner: ""), requester: Self.caller)
        let history = try world.store.history(named: "api")
        #expect(history.versions.map(\.version) == [2, 1])
        #expect(history.versions[0].writer == "agent: git (pid 4242; /usr/bin/git < /usr/bin/bash; unit session-2.scope)")
        #expect(history.versions[1].writer == "", "written before, by a writer that did not say")
    }

    @Test func anEditedByteIsFoundAtItsRecord() throws {
        let world = try World()
        defer { world.temp.cleanUp() }
        world.exercise()
        var lines = try world.lines()
        lines[2] = lines[2].replacingOccurrences(of: "\"add\"", with: "\"adc\"")
        try world.write(lines: lines)
        let error = expectVaultError(.tampered) { try world.verify() }
        #expect(error?.message.contains("at record 3 (") == true)
        #expect(error?.message.contains("edited") == true)
    }

    @Test func aDeletedRecordIsFoundAtTheOneAfterIt() throws {
        let world = try World()
        defer { world.temp.cleanUp() }
        world.exercise()
        var lines = try world.lines()
        lines.remove(at: 1)
        try world.write(lines: lines)
        let error = expectVaultError(.tampered) { try world.verify() }
        #expect(error?.message.contains("at record 3 (") == true)
        #expect(error?.message.contains("removed") == true)
    }

    @Test func swappedRecordsAreFound() throws {
        let world = try World()
        defer { world.temp.cleanUp() }
        world.exercise()
        var lines = try world.lines()
        lines.swapAt(1, 2)
        try world.write(lines: lines)
        let error = expectVaultError(.tampered) { try world.verify() }
        #expect(error?.message.contains("at record 3 (") == true)
    }

    @Test func aCutTailIsFoundThroughTheHead() throws {
        let world = try World()
        defer { world.temp.cleanUp() }
        world.exercise()
        var lines = try world.lines()
        lines.removeLast(2)
        try world.write(lines: lines)
        let error = expectVaultError(.tampered) { try world.verify() }
        #expect(error?.message.contains("at record 4: it is missing") == true)
        // Deleting the head as well is no way out.
        try FileManager.default.removeItem(atPath: world.auditFolder + "/\(world.vaultID).head")
        let headless = expectVaultError(.tampered) { try world.verify() }
        #expect(headless?.message.contains("head") == true)
    }

    @Test func theWrongKeyVerifiesNothing() throws {
        let world = try World()
        defer { world.temp.cleanUp() }
        world.exercise()
        let other = SymmetricKey(copying: [UInt8](repeating: 7, count: 32))
        let error = expectVaultError(.tampered) { try AuditLogReader.verify(directory: world.auditFolder, vaultID: world.vaultID, key: other) }
        #expect(error?.message.contains("at record 1 (") == true)
        #expect(error?.message.contains("key") == true)
    }

    @Test func rotationAtTheSizeBoundKeepsTheChainVerifiable() throws {
        let world = try World(limits: AuditLog.Limits(maximumFileBytes: 1_500, rotatedFiles: 2))
        defer { world.temp.cleanUp() }
        for _ in 0..<4 { world.exercise() }   // 20 records of about 400 bytes: more than three files
        let names = try FileManager.default.contentsOfDirectory(atPath: world.auditFolder).sorted()
        #expect(names == ["\(world.vaultID).head", "\(world.vaultID).lock", "\(world.vaultID).log", "\(world.vaultID).log.1",
                          "\(world.vaultID).log.2"])
        for name in names where name.contains(".log") {
            let size = try #require(try FileManager.default.attributesOfItem(atPath: world.auditFolder + "/" + name)[.size] as? Int)
            #expect(size <= 1_500)
        }
        let verified = try world.verify()
        #expect(verified.startsAfterRotation, "the oldest file was dropped")
        #expect(verified.firstSequence > 1)
        #expect(verified.firstSequence + UInt64(verified.recordsChecked) - 1 == 20)
        #expect(verified.firstFile == "\(world.vaultID).log.2")
        // The records stay chained across the files, and an edit in a rotated file is still found.
        let rotated = world.auditFolder + "/\(world.vaultID).log.1"
        var text = try String(contentsOfFile: rotated, encoding: .utf8)
        text = text.replacingOccurrences(of: "\"allowed\"", with: "\"refused\"")
        try text.write(toFile: rotated, atomically: false, encoding: .utf8)
        expectVaultError(.tampered) { try world.verify() }
    }

    @Test func aLogThatCannotBeWrittenRefusesTheRequest() throws {
        let world = try World()
        defer { world.temp.cleanUp() }
        _ = world.handler.answer(.get(directory: world.directory, name: "api", owner: ""), requester: Self.caller)
        // The log replaced by a folder: the next record cannot be appended.
        try FileManager.default.removeItem(atPath: world.logPath)
        try FileManager.default.createDirectory(atPath: world.logPath, withIntermediateDirectories: false)
        let response = world.handler.answer(.get(directory: world.directory, name: "api", owner: ""), requester: Self.caller)
        guard case let .refused(error) = response else {
            Issue.record("a request was answered without its audit record: \(response)")
            return
        }
        #expect(error.message.contains("audit log"))
        let added = world.handler.answer(.add(directory: world.directory, entries: [NewEntry(name: "x", secret: secret("x"))], replace: false),
                                         requester: Self.caller)
        #expect(AgentRequestHandlerTests.refusal(added) != nil)
        #expect(try world.store.list().map(\.name) == ["api", "private-key"], "nothing written without its record")
    }

    @Test func theChainSurvivesRotationOfTheDataKeyAndARestartedAgent() throws {
        let world = try World()
        defer { world.temp.cleanUp() }
        world.exercise()
        try world.store.rotate()
        try world.store.changeKey(to: try Fixtures.keyFile("bob.key", in: world.temp))
        let again = AgentRequestHandler(socketPath: "/run/test/agent.sock", idleTimeout: .seconds(900), maximumLifetime: .seconds(28_800),
                                        log: { _ in }, open: { try SecretStore.open(in: $0, key: $1, options: .testing()) },
                                        audit: AgentAudit(directory: world.auditFolder))
        _ = again.answer(.unlock(directory: world.directory, key: try Fixtures.keyFile("bob.key", in: world.temp)))
        _ = again.answer(.get(directory: world.directory, name: "api", owner: ""), requester: Self.caller)
        let reopened = try SecretStore.open(in: world.directory, key: try Fixtures.keyFile("bob.key", in: world.temp), options: .testing())
        let verified = try AuditLogReader.verify(directory: world.auditFolder, vaultID: world.vaultID, key: try reopened.auditKey())
        #expect(verified.recordsChecked == 6)
    }

    // MARK: - A lost head, removed first records, deleted files (review of issue 39, findings 1, 2 and 7)

    /// Runs one more request as the agent would after the log was tampered with.
    static func nextWrite(_ world: World) {
        _ = world.handler.answer(.get(directory: world.directory, name: "api", owner: ""), requester: caller)
    }

    @Test func aCutLogWithItsHeadDeletedIsNotMadeIntactByTheNextWrite() throws {
        let world = try World()
        defer { world.temp.cleanUp() }
        world.exercise()
        var lines = try world.lines()
        lines.removeLast(2)
        try world.write(lines: lines)
        try FileManager.default.removeItem(atPath: world.auditFolder + "/\(world.vaultID).head")
        Self.nextWrite(world)
        let records = try world.records()
        #expect(records.map { Self.text($0["operation"]) } == ["get", "list", "add", AuditLog.headLostOperation, "get"])
        let error = expectVaultError(.tampered) { try world.verify() }
        #expect(error?.message.contains("the audit log failed its check at record 4 (") == true, "\(error?.message ?? "")")
        #expect(error?.message.contains("head was missing") == true)
        // Still failing after more writes: the marker stays in the chain.
        Self.nextWrite(world)
        #expect(expectVaultError(.tampered) { try world.verify() }?.message.contains("at record 4 (") == true)
    }

    @Test func aHeadReplacedByGarbageIsNotMadeIntactByTheNextWrite() throws {
        let world = try World()
        defer { world.temp.cleanUp() }
        world.exercise()
        var lines = try world.lines()
        lines.removeLast(2)
        try world.write(lines: lines)
        let head = world.auditFolder + "/\(world.vaultID).head"
        try Data(repeating: 0x41, count: 300).write(to: URL(fileURLWithPath: head))
        Self.nextWrite(world)
        let error = expectVaultError(.tampered) { try world.verify() }
        #expect(error?.message.contains("at record 4 (") == true, "\(error?.message ?? "")")
        #expect(error?.message.contains("failed its MAC") == true)
        #expect(try Data(contentsOf: URL(fileURLWithPath: head)).count == 172, "the garbage was replaced, not written over in part")
    }

    @Test func aLineThatIsNotARecordBlamesTheLogNotTheVault() throws {
        let world = try World()
        defer { world.temp.cleanUp() }
        world.exercise()
        var lines = try world.lines()
        lines[1] = "not a record"
        try world.write(lines: lines)
        let error = expectVaultError(.tampered) { try AuditLogReader.read(directory: world.auditFolder, vaultID: world.vaultID) }
        #expect(error?.message == "the audit log failed its check at line 2 of \(world.vaultID).log: it is not a record")
        #expect(error?.message.contains("the vault failed") == false)
        #expect(error?.fix?.contains("the vault itself is not affected") == true)
    }

    @Test func removedFirstRecordsDoNotPassForRotatedOut() throws {
        let world = try World()
        defer { world.temp.cleanUp() }
        world.exercise()
        let lines = try world.lines()
        try world.write(lines: Array(lines.dropFirst(2)))   // tail -n +3 log > log, no rotated file
        let error = expectVaultError(.tampered) { try world.verify() }
        #expect(error?.message.contains("at record 3 (") == true, "\(error?.message ?? "")")
        #expect(error?.message.contains("removed, not rotated out") == true)
        #expect(error?.fix?.contains("restore it from a backup") == false)
        #expect(error?.fix?.contains("the vault itself is not affected") == true)
    }

    @Test func deletedOlderFilesThatTheAgentDidNotRotateOutAreFound() throws {
        let world = try World(limits: AuditLog.Limits(maximumFileBytes: 1_500, rotatedFiles: 8))
        defer { world.temp.cleanUp() }
        for _ in 0..<4 { world.exercise() }   // 20 records, about five files, none dropped
        let folder = world.auditFolder + "/\(world.vaultID)"
        #expect(FileManager.default.fileExists(atPath: folder + ".log.3"))
        #expect(try world.verify().firstSequence == 1)
        var number = 2
        while FileManager.default.fileExists(atPath: folder + ".log.\(number)"), number < 10 {
            try FileManager.default.removeItem(atPath: folder + ".log.\(number)")
            number += 1
        }
        let error = expectVaultError(.tampered) { try world.verify() }
        #expect(error?.message.contains("removed, not rotated out") == true, "\(error?.message ?? "")")
        #expect(error?.message.contains(".log.1, line 1)") == true)
    }

    @Test func filesTheAgentRotatedOutStillVerifyFromTheOldestKept() throws {
        let world = try World(limits: AuditLog.Limits(maximumFileBytes: 1_500, rotatedFiles: 1))
        defer { world.temp.cleanUp() }
        for _ in 0..<4 { world.exercise() }
        let verified = try world.verify()
        #expect(verified.startsAfterRotation && verified.firstFile == "\(world.vaultID).log.1")
        // Deleting the one rotated file the agent kept is not rotation.
        try FileManager.default.removeItem(atPath: world.auditFolder + "/\(world.vaultID).log.1")
        #expect(expectVaultError(.tampered) { try world.verify() }?.message.contains("removed, not rotated out") == true)
    }
}
