@testable import CredentialVaultPostgres
import CredentialVault
import Foundation
import Synchronization
import Testing
import TestScheduling
import VaultCrypto

/// The review findings on layout 3 (issue 38), each against a real server: a bucket checked
/// against all of its rows before a write seals it forward, the token buckets locked before a
/// refresh, `acceptRollback` rewriting only the buckets read, a database put back to before the
/// upgrade, duplicate lookups, a `public.pg_is_in_recovery()` that lies.
@Suite("PostgreSQL store: buckets (version 3), review findings", .blockingWork, .enabled(if: PostgresServer.shouldRun))
struct PostgresBucketReviewTests: PostgresBucketRowQueries {
    private func newStore(url: String? = nil, bits: UInt8 = 6, memory: RollbackMemory = .disabled,
                          layoutVersion: Int = 3) async throws -> (PostgresSecretStore, VaultKey) {
        let key = try PostgresServer.newKey()
        var options = PostgresServer.options()
        options.bucketBits = bits
        options.rollbackMemory = memory
        options.layoutVersion = layoutVersion
        return (try await PostgresSecretStore.create(configuration: try PostgresServer.configuration(url: url), key: key, options: options), key)
    }

    private func reopen(_ store: PostgresSecretStore, key: VaultKey, memory: RollbackMemory = .disabled,
                        acceptRollback: Bool = false) async throws -> PostgresSecretStore {
        var options = PostgresServer.options()
        options.rollbackMemory = memory
        options.acceptRollback = acceptRollback
        return try await PostgresSecretStore.open(configuration: store.configuration, key: key, options: options)
    }

    private func temporaryDirectory() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("vault-pgr-\(UUID().uuidString)").path
    }

    /// A database of its own on the shared server (for changes to the schema no other test may see).
    private func withOwnDatabase(_ body: (String) async throws -> Void) async throws {
        let base = try PostgresServer.requireURL()
        let name = "vault_review_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        try PostgresServer.psql("CREATE DATABASE \(name)")
        guard let slash = base.range(of: "/", options: .backwards) else { throw TestFailure("no database in \(base)") }
        let url = String(base[..<slash.upperBound]) + name
        do {
            try await body(url)
        } catch {
            _ = try? PostgresServer.psql("DROP DATABASE \(name) WITH (FORCE)")
            throw error
        }
        try PostgresServer.psql("DROP DATABASE \(name) WITH (FORCE)")
    }

    @Test("an old bucket row put back alone is refused by a writer that never saw the newer one (not sealed forward), and then an old entry row put back is still refused")
    func oldBucketAloneIsNotLaundered() async throws {
        let (store, key) = try await newStore()
        let names = try names(store, count: 3, sameBucket: true)
        try await store.add(NewEntry(name: names[0], secret: SecureBytes("old")))
        let bucketRow = try bucketCondition(store, names[0]), row = try rowCondition(store, names[0])
        let savedBucket = try PostgresServer.psql("SELECT encode(sealed, 'hex') FROM vault_buckets WHERE \(bucketRow)")
        let savedRow = try PostgresServer.psql("SELECT encode(sealed, 'hex') || ' ' || row_generation FROM vault_entries WHERE \(row)").split(separator: " ")
        try await store.put(NewEntry(name: names[0], secret: SecureBytes("new")))
        try await store.add(NewEntry(name: names[1], secret: SecureBytes("other")))
        await store.close()
        // The bucket alone goes back: it lists names[0] at its old generation, names[1] not at all.
        try PostgresServer.psql("UPDATE vault_buckets SET sealed = decode('\(savedBucket)', 'hex') WHERE \(bucketRow)")
        let memoryless = try await reopen(store, key: key)
        #expect(await errorCode { try await memoryless.add(NewEntry(name: names[2], secret: SecureBytes("x"))) } == .tampered)
        #expect(await errorCode { try await memoryless.put(NewEntry(name: names[0], secret: SecureBytes("x"))) } == .tampered)
        // Had the write sealed the stale listing forward, the old row put back now would read as current.
        try PostgresServer.psql("UPDATE vault_entries SET sealed = decode('\(savedRow[0])', 'hex'), row_generation = \(savedRow[1]) WHERE \(row)")
        #expect(await errorCode { _ = try await memoryless.list() } == .tampered)
        await memoryless.close()
    }

    @Test("a row added to a bucket behind the store's back, or one of its rows deleted, is refused by a write to another entry of that bucket")
    func writeChecksEveryRowOfItsBuckets() async throws {
        let (store, _) = try await newStore()
        let names = try names(store, count: 3, sameBucket: true)
        try await store.add(NewEntry(name: names[0], secret: SecureBytes("a")))
        try await store.add(NewEntry(name: names[1], secret: SecureBytes("b")))
        // A copy of names[0]'s row under another lookup of the same bucket: a row its bucket does not list.
        var extra = try lookup(store, names[0])
        extra[31] ^= 0xFF
        try PostgresServer.psql("""
            INSERT INTO vault_entries (vault_id, lookup, row_generation, sealed)
            SELECT vault_id, decode('\(hex(extra))', 'hex'), row_generation, sealed FROM vault_entries WHERE \(try rowCondition(store, names[0]))
            """)
        #expect(await errorCode { try await store.add(NewEntry(name: names[2], secret: SecureBytes("c"))) } == .tampered)
        try PostgresServer.psql("DELETE FROM vault_entries WHERE vault_id = \(vault(store)) AND lookup = decode('\(hex(extra))', 'hex')")
        try await store.add(NewEntry(name: names[2], secret: SecureBytes("c")))
        try PostgresServer.psql("DELETE FROM vault_entries WHERE \(try rowCondition(store, names[1]))")
        #expect(await errorCode { try await store.put(NewEntry(name: names[0], secret: SecureBytes("x"))) } == .tampered)
        await store.close()
    }

    @Test("writers of one bucket at once all succeed: rows read before a lock wait are read again, not taken for tampering")
    func concurrentWritersOfOneBucket() async throws {
        let (store, key) = try await newStore()
        let names = try names(store, count: 8, sameBucket: true)
        let stores = [store, try await reopen(store, key: key), try await reopen(store, key: key), try await reopen(store, key: key)]
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (index, name) in names.enumerated() {
                let writer = stores[index % stores.count]
                group.addTask {
                    for round in 0..<5 { try await writer.put(NewEntry(name: name, secret: SecureBytes("v\(round)"))) }
                }
            }
            try await group.waitForAll()
        }
        #expect(try await store.list().count == 8)
        #expect(try await stores[1].secret(named: names[3]) == SecureBytes("v4"))
        for other in stores { await other.close() }
    }

    @Test("a refresh locks both token buckets before calling the refresher: a transaction holding one delays the refresh, not the save after the grant")
    func refreshLocksTokenBucketsBeforeTheGrant() async throws {
        let (store, _) = try await newStore()
        let session = "session-\(UUID().uuidString)"
        let expired = Credentials(accessToken: SecureBytes("old-access"), refreshToken: SecureBytes("old-refresh"),
                                  expiresAt: Date(timeIntervalSinceNow: -60))
        try await store.saveCredentials(expired, session: session)
        let refreshBucket = try bucket(store, PostgresSecretStore.SessionEntryNames.refreshToken, owner: session)
        let holdSeconds = 3.0
        let started = Date()
        // A psql of its own (not waited on here) holds the refresh token's bucket for holdSeconds.
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        holder.arguments = ["psql", try PostgresServer.requireURL(), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-c", """
            BEGIN; SELECT 1 FROM vault_buckets WHERE vault_id = \(vault(store)) AND bucket = \(refreshBucket) FOR UPDATE;
            SELECT pg_sleep(\(holdSeconds)); COMMIT
            """]
        holder.standardOutput = FileHandle.nullDevice
        try holder.run()
        // Until the holder has the lock (bounded).
        for _ in 0..<100 {
            let waiting = try PostgresServer.psql("SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(\(holdSeconds))%' AND state = 'active' AND pid <> pg_backend_pid()")
            if waiting != "0" { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        let calledAfter = Mutex<Double?>(nil)
        let fresh = try await store.validCredentials(session: session) { _ in
            calledAfter.withLock { $0 = Date().timeIntervalSince(started) }
            return Credentials(accessToken: SecureBytes("new-access"), refreshToken: SecureBytes("new-refresh"),
                               expiresAt: Date(timeIntervalSinceNow: 3600))
        }
        for _ in 0..<400 where holder.isRunning { try await Task.sleep(for: .milliseconds(50)) }
        #expect(!holder.isRunning && holder.terminationStatus == 0)
        #expect(fresh.accessToken == SecureBytes("new-access"))
        let after = try #require(calledAfter.withLock { $0 })
        #expect(after >= holdSeconds - 0.5, "the refresher ran \(after) s after the holder took the lock, before it let go")
        await store.close()
    }

    @Test("acceptRollback rewrites only the buckets it read: the others keep their remembered floors; a command that read nothing writes nothing")
    func acceptRollbackKeepsOtherBuckets() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (store, key) = try await newStore(memory: .directory(directory))
        let names = try names(store, count: 2, sameBucket: false)
        let bRow = try bucketCondition(store, names[1])
        let emptyB = try PostgresServer.psql("SELECT encode(sealed, 'hex') FROM vault_buckets WHERE \(bRow)")
        try await store.add(NewEntry(name: names[0], secret: SecureBytes("a1")))
        let aBucket = try bucketCondition(store, names[0]), aRow = try rowCondition(store, names[0])
        let savedA = try PostgresServer.psql("SELECT encode(sealed, 'hex') FROM vault_buckets WHERE \(aBucket)")
        let savedARow = try PostgresServer.psql("SELECT encode(sealed, 'hex') || ' ' || row_generation FROM vault_entries WHERE \(aRow)").split(separator: " ")
        try await store.put(NewEntry(name: names[0], secret: SecureBytes("a2")))
        try await store.add(NewEntry(name: names[1], secret: SecureBytes("b")))
        await store.close()
        let record = directory + "/pg-\(hex(store.vaultID)).buckets"
        let before = try Data(contentsOf: URL(fileURLWithPath: record))
        // A command that fails before reading anything writes nothing.
        let idle = try await reopen(store, key: key, memory: .directory(directory), acceptRollback: true)
        await idle.close()
        #expect(try Data(contentsOf: URL(fileURLWithPath: record)) == before)
        // Bucket A put back on purpose, accepted and read.
        try PostgresServer.psql("""
            UPDATE vault_buckets SET sealed = decode('\(savedA)', 'hex') WHERE \(aBucket);
            UPDATE vault_entries SET sealed = decode('\(savedARow[0])', 'hex'), row_generation = \(savedARow[1]) WHERE \(aRow)
            """)
        let accepting = try await reopen(store, key: key, memory: .directory(directory), acceptRollback: true)
        #expect(try await accepting.secret(named: names[0]) == SecureBytes("a1"))
        await accepting.close()
        let later = try await reopen(store, key: key, memory: .directory(directory))
        #expect(try await later.secret(named: names[0]) == SecureBytes("a1"))
        await later.close()
        // Bucket B, never read by the accepting command, kept its floor: B put back empty is a rollback.
        try PostgresServer.psql("""
            UPDATE vault_buckets SET sealed = decode('\(emptyB)', 'hex') WHERE \(bRow);
            DELETE FROM vault_entries WHERE \(try rowCondition(store, names[1]))
            """)
        let check = try await reopen(store, key: key, memory: .directory(directory))
        #expect(await errorCode { _ = try await check.secret(named: names[1]) } == .rollbackDetected)
        await check.close()
    }

    @Test("a database put back to before the move to layout 3 (state version 2 again) is refused at open on a machine that remembers the buckets; acceptRollback opens it")
    func restoredToBeforeTheUpgrade() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (store, key) = try await newStore(memory: .directory(directory), layoutVersion: 2)
        try await store.add(NewEntry(name: "token", secret: SecureBytes("old")))
        let id = vault(store)
        let savedState = try PostgresServer.psql("SELECT encode(state, 'hex') FROM vault_stores WHERE vault_id = \(id)")
        let savedRow = try PostgresServer.psql("SELECT encode(sealed, 'hex') || ' ' || row_generation FROM vault_entries WHERE \(try rowCondition(store, "token"))").split(separator: " ")
        _ = try await store.upgradeLayout()
        try await store.put(NewEntry(name: "token", secret: SecureBytes("new")))
        await store.close()
        try PostgresServer.psql("""
            DELETE FROM vault_buckets WHERE vault_id = \(id);
            UPDATE vault_stores SET state = decode('\(savedState)', 'hex') WHERE vault_id = \(id);
            UPDATE vault_entries SET sealed = decode('\(savedRow[0])', 'hex'), row_generation = \(savedRow[1]) WHERE \(try rowCondition(store, "token"))
            """)
        #expect(await errorCode { _ = try await reopen(store, key: key, memory: .directory(directory)) } == .rollbackDetected)
        let accepted = try await reopen(store, key: key, memory: .directory(directory), acceptRollback: true)
        #expect(try await accepted.secret(named: "token") == SecureBytes("old"))
        await accepted.close()
    }

    @Test("duplicate lookups (the primary key dropped, one row deleted, another doubled) are tampered: list, verify, a write, upgradeLayout")
    func duplicateLookupsAreTampered() async throws {
        try await withOwnDatabase { url in
            let (store, key) = try await newStore(url: url)
            let names = try names(store, count: 2, sameBucket: true)
            try await store.add(NewEntry(name: names[0], secret: SecureBytes("a")))
            try await store.add(NewEntry(name: names[1], secret: SecureBytes("b")))
            let legacyKey = try PostgresServer.newKey()
            var legacyOptions = PostgresServer.options()
            legacyOptions.layoutVersion = 2
            let legacy = try await PostgresSecretStore.create(configuration: try PostgresServer.configuration(url: url), key: legacyKey, options: legacyOptions)
            try await legacy.add(NewEntry(name: "a", secret: SecureBytes("a")))
            try await legacy.add(NewEntry(name: "b", secret: SecureBytes("b")))
            let constraint = try PostgresServer.psql("SELECT conname FROM pg_constraint WHERE conrelid = 'vault_entries'::regclass AND contype = 'p'", url: url)
            try PostgresServer.psql("""
                ALTER TABLE vault_entries DROP CONSTRAINT \(constraint);
                DELETE FROM vault_entries WHERE \(try rowCondition(store, names[1]));
                INSERT INTO vault_entries SELECT * FROM vault_entries WHERE \(try rowCondition(store, names[0]));
                DELETE FROM vault_entries WHERE \(try rowCondition(legacy, "b"));
                INSERT INTO vault_entries SELECT * FROM vault_entries WHERE \(try rowCondition(legacy, "a"))
                """, url: url)
            let fresh = try await reopen(store, key: key)
            #expect(await errorCode { _ = try await fresh.list() } == .tampered)
            #expect(await errorCode { _ = try await fresh.verify() } == .tampered)
            #expect(await errorCode { try await fresh.put(NewEntry(name: names[0], secret: SecureBytes("x"))) } == .tampered)
            #expect(await errorCode { _ = try await legacy.upgradeLayout() } == .tampered)
            await fresh.close()
            await legacy.close()
            await store.close()
        }
    }

    @Test("a public.pg_is_in_recovery() that lies (search_path public first) changes nothing: the store calls pg_catalog's")
    func qualifiedRecoveryCheck() async throws {
        try await withOwnDatabase { url in
            let (store, key) = try await newStore(url: url)
            try await store.add(NewEntry(name: "a", secret: SecureBytes("value")))
            await store.close()
            let database = String(url[url.index(after: try #require(url.range(of: "/", options: .backwards)).lowerBound)...])
            try PostgresServer.psql("""
                CREATE FUNCTION public.pg_is_in_recovery() RETURNS boolean LANGUAGE sql AS 'SELECT true';
                ALTER DATABASE \(database) SET search_path = public, pg_catalog
                """, url: url)
            var options = PostgresServer.options(timeout: .seconds(20))
            options.rollbackMemory = .disabled
            let reader = try await PostgresSecretStore.open(configuration: store.configuration, key: key, options: options)
            #expect(try await reader.secret(named: "a") == SecureBytes("value"))
            #expect(try await reader.list().count == 1)
            try await reader.put(NewEntry(name: "a", secret: SecureBytes("again")))
            await reader.close()
        }
    }
}
