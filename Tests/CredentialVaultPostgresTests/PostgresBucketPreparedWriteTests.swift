@testable import CredentialVaultPostgres
import CredentialVault
import Foundation
import Testing
import TestScheduling
import VaultCrypto

/// A write of one entry to a version 3 store sends two named prepared statements (lock + read,
/// then write); a connection that lost them (a pooler's DISCARD ALL) has the write sent again
/// unprepared, and the store writes unprepared from then on, as it reads.
@Suite("PostgreSQL store: buckets (version 3), prepared writes of one entry", .blockingWork, .enabled(if: PostgresServer.shouldRun))
struct PostgresBucketPreparedWriteTests {
    private func prepared(_ store: PostgresSecretStore) async throws -> Set<String> {
        var names: Set<String> = []
        for row in try await store.client.rows("SELECT name FROM pg_prepared_statements") {
            names.insert(try row.decode(String.self))
        }
        return names
    }

    @Test("put, add and remove of one entry use the prepared statements; after DEALLOCATE ALL the write is sent again unprepared, nothing lost")
    func preparedWritesAndFallback() async throws {
        var configuration = try PostgresServer.configuration()
        configuration.maximumConnections = 1   // one connection: the statements below run where the store writes
        var options = PostgresServer.options()
        options.layoutVersion = 3
        let store = try await PostgresSecretStore.create(configuration: configuration, key: try PostgresServer.newKey(), options: options)
        try await store.add(NewEntry(name: "a", secret: SecureBytes("value-a")))
        try await store.put(NewEntry(name: "a", secret: SecureBytes("value-a2")))
        var names = try await prepared(store)
        #expect(names.isSuperset(of: [PostgresBucketSnapshot.name, PostgresBucketWriteCall.name]))
        #expect(!names.contains(PostgresBucketEntryPut.name), "one call of the write procedure, not the three statements")
        // Without the procedure (as where it could not be created): the compare-and-set statements.
        store.writesByProcedure.store(false, ordering: .relaxed)
        try await store.add(NewEntry(name: "b", secret: SecureBytes("value-b")))
        try await store.remove(named: "b")
        names = try await prepared(store)
        #expect(names.isSuperset(of: [PostgresBucketEntryPut.name, PostgresBucketEntryRemove.name]))
        store.writesByProcedure.store(true, ordering: .relaxed)
        #expect(await errorCode { try await store.add(NewEntry(name: "a", secret: SecureBytes("again"))) } == .alreadyExists)
        #expect(await errorCode { try await store.remove(named: "b") } == .notFound)
        let preparedBefore = store.preparedReads.load(ordering: .relaxed)
        #expect(preparedBefore)

        // What PgBouncer's server_reset_query does between clients: the statements are gone from the
        // server while the driver still thinks them prepared (SQLSTATE 26000 on the next write).
        _ = try await store.client.rows("DEALLOCATE ALL")
        try await store.put(NewEntry(name: "c", secret: SecureBytes("value-c")))
        let preparedAfter = store.preparedReads.load(ordering: .relaxed)
        #expect(!preparedAfter)
        try await store.put(NewEntry(name: "a", secret: SecureBytes("value-a3")))
        try await store.remove(named: "c")
        try await store.put(contentsOf: [NewEntry(name: "d", secret: SecureBytes("value-d")), NewEntry(name: "e", secret: SecureBytes("value-e"))])
        #expect(try await store.secret(named: "a") == SecureBytes("value-a3"))
        #expect(await errorCode { _ = try await store.secret(named: "c") } == .notFound)
        #expect(try await store.list().map(\.name) == ["a", "d", "e"])
        #expect(try await store.verify().entriesChecked == 3)
        await store.close()
    }

    @Test("a write replacing more entries than come with the lock statement keeps each one's creation time (read by a statement of its own)")
    func manyReplacedKeepTheirCreationTime() async throws {
        var options = PostgresServer.options()
        options.layoutVersion = 3
        let store = try await PostgresSecretStore.create(configuration: try PostgresServer.configuration(), key: try PostgresServer.newKey(), options: options)
        let count = PostgresSecretStore.sealedWithTheLock * 2
        try await store.put(contentsOf: (0..<count).map { NewEntry(name: "n\($0)", secret: SecureBytes("old")) })
        let before = Dictionary(uniqueKeysWithValues: try await store.list().map { ($0.name, $0.createdAt) })
        try await Task.sleep(for: .milliseconds(20))
        // More than sealedWithTheLock replaced, one new, one named twice: all in one transaction.
        var batch = (0..<PostgresSecretStore.sealedWithTheLock + 2).map { NewEntry(name: "n\($0)", secret: SecureBytes("new")) }
        batch.append(NewEntry(name: "fresh", secret: SecureBytes("new")))
        batch.append(NewEntry(name: "n0", secret: SecureBytes("newer")))
        try await store.put(contentsOf: batch)
        let after = try await store.list()
        #expect(after.count == count + 1)
        for entry in after where entry.name != "fresh" {
            #expect(entry.createdAt == before[entry.name], "\(entry.name)'s creation time changed")
        }
        #expect(try await store.secret(named: "n0") == SecureBytes("newer"))
        #expect(try await store.secret(named: "n1") == SecureBytes("new"))
        #expect(try await store.secret(named: "n\(count - 1)") == SecureBytes("old"))
        #expect(try await store.verify().entriesChecked == count + 1)
        await store.close()
    }
}
