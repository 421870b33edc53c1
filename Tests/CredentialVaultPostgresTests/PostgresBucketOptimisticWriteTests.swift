@testable import CredentialVaultPostgres
import CredentialVault
import Foundation
import Testing
import TestScheduling
import VaultCrypto

/// A write of one entry to a version 3 store reads its bucket without a lock and saves it only if
/// it is still the row read (compare-and-set, no BEGIN/COMMIT). These tests make another writer save
/// the bucket between that read and that write, deterministically: the other writer's transaction
/// holds the bucket row, changed and not yet committed, while the optimistic write reads the old row
/// and blocks on the row lock; the holder then commits.
@Suite("PostgreSQL store: buckets (version 3), optimistic writes of one entry", .blockingWork, .enabled(if: PostgresServer.shouldRun))
struct PostgresBucketOptimisticWriteTests: PostgresBucketRowQueries {
    /// The advisory lock under which this suite's tests change the triggers of vault_entries.
    static let triggerLock: Int64 = 38_001

    private func newStore() async throws -> (PostgresSecretStore, VaultKey) {
        let key = try PostgresServer.newKey()
        var options = PostgresServer.options()
        options.bucketBits = 4
        return (try await PostgresSecretStore.create(configuration: try PostgresServer.configuration(), key: key, options: options), key)
    }

    /// Waits (at most 20 s) until a backend waits on a lock the holder's backend (`holder`) holds:
    /// the optimistic write's compare-and-set, blocked behind it.
    private func waitForAWaiter(on holder: Int32) async throws {
        for _ in 0..<200 {
            let waiting = try PostgresServer.psql("""
                SELECT count(*) FROM pg_stat_activity WHERE \(holder) = ANY(pg_catalog.pg_blocking_pids(pid))
                """)
            if waiting != "0" { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        Issue.record("no write waited on the held bucket within 20 s")
    }

    /// Runs `change` as a concurrent writer would: another store's transaction applies it to the
    /// bucket and holds it uncommitted while `optimistic` runs, until `optimistic` blocks on the row.
    private func interleave(_ store: PostgresSecretStore, holder: PostgresSecretStore, change: PostgresSecretStore.Change,
                            optimistic: @escaping @Sendable () async throws -> Void) async throws {
        let release = AsyncStream<Void>.makeStream()
        let holding = AsyncStream<Int32>.makeStream()
        let holderTask = Task {
            try await holder.client.withTransaction(logger: holder.options.logger) { connection in
                _ = try await holder.apply([change], on: connection)
                for try await pid in try await connection.query("SELECT pg_catalog.pg_backend_pid()", logger: holder.options.logger)
                    .decode(Int32.self) {
                    holding.continuation.yield(pid)
                }
                for await _ in release.stream { break }
            }
        }
        var holderPID: Int32 = 0
        for await pid in holding.stream { holderPID = pid; break }
        let writer = Task { try await optimistic() }
        try await waitForAWaiter(on: holderPID)
        release.continuation.yield()
        try await holderTask.value
        try await writer.value
    }

    @Test("a put whose bucket another writer saved after it was read writes nothing, reads again and keeps both entries")
    func putAfterTheBucketMoved() async throws {
        let (store, key) = try await newStore()
        let same = try names(store, count: 3, sameBucket: true)
        try await store.add(NewEntry(name: same[0], secret: SecureBytes("first")))
        let holder = try await PostgresSecretStore.open(configuration: store.configuration, key: key, options: PostgresServer.options())
        let generationBefore = try await store.verify().generation
        try await interleave(store, holder: holder, change: .put(NewEntry(name: same[1], secret: SecureBytes("held")), replacing: true)) {
            try await store.put(NewEntry(name: same[2], secret: SecureBytes("optimistic")))
        }
        // Without the compare-and-set, the optimistic put would have sealed a listing without
        // same[1] over the holder's: same[1]'s row would be one its bucket does not list (tampered).
        #expect(try await store.secret(named: same[1]) == SecureBytes("held"))
        #expect(try await store.secret(named: same[2]) == SecureBytes("optimistic"))
        #expect(try await store.secret(named: same[0]) == SecureBytes("first"))
        let report = try await store.verify()
        #expect(report.entriesChecked == 3)
        #expect(report.generation == generationBefore + 2, "two saves of the bucket, one each")
        await holder.close()
        await store.close()
    }

    @Test("a remove whose bucket another writer saved after it was read writes nothing, reads again and removes only its entry")
    func removeAfterTheBucketMoved() async throws {
        let (store, key) = try await newStore()
        let same = try names(store, count: 3, sameBucket: true)
        try await store.add(NewEntry(name: same[0], secret: SecureBytes("first")))
        try await store.add(NewEntry(name: same[2], secret: SecureBytes("to remove")))
        let holder = try await PostgresSecretStore.open(configuration: store.configuration, key: key, options: PostgresServer.options())
        try await interleave(store, holder: holder, change: .put(NewEntry(name: same[1], secret: SecureBytes("held")), replacing: true)) {
            try await store.remove(named: same[2])
        }
        #expect(try await store.list().map(\.name).sorted() == [same[0], same[1]].sorted())
        #expect(try await store.verify().entriesChecked == 2)
        #expect(await errorCode { _ = try await store.secret(named: same[2]) } == .notFound)
        await holder.close()
        await store.close()
    }

    @Test("an add whose name another writer took after it was read fails with 'already exists' and writes nothing")
    func addAfterTheNameWasTaken() async throws {
        let (store, key) = try await newStore()
        let name = try names(store, count: 1, sameBucket: true)[0]
        let holder = try await PostgresSecretStore.open(configuration: store.configuration, key: key, options: PostgresServer.options())
        let failure = Failure()
        try await interleave(store, holder: holder, change: .put(NewEntry(name: name, secret: SecureBytes("held")), replacing: false)) {
            failure.code = await errorCode { try await store.add(NewEntry(name: name, secret: SecureBytes("late"))) }
        }
        #expect(failure.code == .alreadyExists)
        #expect(try await store.secret(named: name) == SecureBytes("held"))
        #expect(try await store.verify().entriesChecked == 1)
        await holder.close()
        await store.close()
    }

    @Test("a write is acknowledged only once it is committed: a commit that fails (a deferred trigger) fails the put, nothing kept; by the procedure and without it",
          arguments: [true, false])
    func acknowledgedOnlyAfterTheCommit(byProcedure: Bool) async throws {
        let (store, _) = try await newStore()
        store.writesByProcedure.store(byProcedure, ordering: .relaxed)
        try await store.add(NewEntry(name: "before", secret: SecureBytes("kept")))
        // Fires at COMMIT: inside the procedure, or, without it, at the statement's Sync, after its
        // CommandComplete. For this store's rows only, so that other tests' writes pass.
        let trigger = "fail_at_commit_\(UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased())"
        // The two cases run at once: their changes of vault_entries' triggers take turns (an advisory
        // lock), or each may hold a lock on the table the other's change waits for (a deadlock).
        try PostgresServer.psql("""
            SELECT pg_catalog.pg_advisory_xact_lock(\(Self.triggerLock));
            CREATE FUNCTION \(trigger)() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN RAISE EXCEPTION 'refused at commit'; END $$;
            CREATE CONSTRAINT TRIGGER \(trigger) AFTER INSERT OR UPDATE ON vault_entries DEFERRABLE INITIALLY DEFERRED
            FOR EACH ROW WHEN (NEW.vault_id = \(vault(store))) EXECUTE FUNCTION \(trigger)()
            """)
        defer { _ = try? PostgresServer.psql("SELECT pg_catalog.pg_advisory_xact_lock(\(Self.triggerLock)); DROP TRIGGER \(trigger) ON vault_entries; DROP FUNCTION \(trigger)()") }
        var failure: VaultError?
        do {
            try await store.put(NewEntry(name: "refused", secret: SecureBytes("never")))
        } catch let error as VaultError {
            failure = error
        }
        let code = failure?.code
        // The procedure's COMMIT raises the trigger's error (a server refusal: .io, 74); without it, postgres-nio
        // meets the error after CommandComplete, closes the connection, and the statement that waits
        // for the commit fails: the write may or may not be committed (unavailable, 69; here it is not).
        #expect(code == (byProcedure ? .io : .serverUnavailable), "the put failed as its commit did")
        #expect(store.writesByProcedure.load(ordering: .relaxed) == byProcedure, "a refused commit is not taken for a missing procedure")
        // Answered by the failed commit, not by the store's deadline: postgres-nio sends a statement
        // written after it closed the connection nowhere, and never answers it (`PostgresOpenSend`).
        #expect(failure?.message.contains("within") == false, "the put failed at once, not at its deadline")
        try PostgresServer.psql("SELECT pg_catalog.pg_advisory_xact_lock(\(Self.triggerLock)); DROP TRIGGER \(trigger) ON vault_entries; DROP FUNCTION \(trigger)()")
        #expect(await errorCode { _ = try await store.secret(named: "refused") } == .notFound)
        try await store.put(NewEntry(name: "after", secret: SecureBytes("kept too")))
        #expect(try await store.list().map(\.name) == ["after", "before"])
        #expect(try await store.verify().entriesChecked == 2)
        await store.close()
    }

    @Test("32 writers on 16 buckets at once, puts and removes: every acknowledged write is there, the store verifies")
    func manyWritersFewBuckets() async throws {
        let (store, key) = try await newStore()
        var stores = [store]
        for _ in 0..<3 { stores.append(try await PostgresSecretStore.open(configuration: store.configuration, key: key, options: PostgresServer.options())) }
        let writers = 32, rounds = 6
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<writers {
                let target = stores[writer % stores.count]
                group.addTask {
                    for round in 0..<rounds {
                        try await target.put(NewEntry(name: "w\(writer)-\(round)", secret: SecureBytes("v\(writer)-\(round)")))
                        if round % 2 == 1 { try await target.remove(named: "w\(writer)-\(round - 1)") }
                    }
                }
            }
            try await group.waitForAll()
        }
        let expected = (0..<writers).flatMap { writer in stride(from: 1, to: rounds, by: 2).map { "w\(writer)-\($0)" } }
        #expect(try await store.list().map(\.name).sorted() == expected.sorted())
        #expect(try await stores[2].secret(named: "w7-3") == SecureBytes("v7-3"))
        #expect(try await store.verify().entriesChecked == expected.count)
        for other in stores { await other.close() }
    }
}

/// An error code set by one task and read by another after it ended.
private final class Failure: @unchecked Sendable {
    private let lock = NSLock()
    private var value: VaultError.Code?
    var code: VaultError.Code? {
        get { lock.lock(); defer { lock.unlock() }; return value }
        set { lock.lock(); value = newValue; lock.unlock() }
    }
}
