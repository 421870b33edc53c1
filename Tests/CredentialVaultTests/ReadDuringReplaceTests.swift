import Foundation
import Synchronization
import Testing
@testable import CredentialVault
import VaultCrypto

/// Readers take no lock (the vault is only ever replaced by rename), so a read that opens
/// the file just before a writer renames a new one over it reads the old inode, which then
/// has no links left. That read must succeed with the old version, not be refused as a
/// file with "0 hard links" (found by scripts/stress).
@Suite struct ReadDuringReplaceTests {
    @Test func readsRacingReplacesSeeOldOrNewNeverAnError() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let key = try Fixtures.keyFile("alice.key", in: temp)
        let directory = temp.child("v")
        let writer = try SecretStore.create(in: directory, key: key, options: .testing())
        try writer.put(NewEntry(name: "stable", secret: secret("s")))
        // A second store: its reads are not serialised with the writer's by the store's own mutex.
        let reader = try SecretStore.open(in: directory, key: key, options: .testing())

        let writes = 300
        let done = Atomic<Bool>(false)
        let writerThread = Thread {
            for index in 0..<writes { try? writer.put(NewEntry(name: "e\(index)", secret: secret("v"))) }
            done.store(true, ordering: .releasing)
        }
        writerThread.start()
        var reads = 0
        var errors: [String] = []
        while !done.load(ordering: .acquiring) {
            do {
                _ = try reader.secret(named: "stable")
            } catch {
                errors.append("\(error)")
            }
            reads += 1
        }
        #expect(errors.isEmpty, "\(errors.count) of \(reads) reads failed, first: \(errors.first ?? "")")
        #expect(try reader.list().count == writes + 1)
    }
}
