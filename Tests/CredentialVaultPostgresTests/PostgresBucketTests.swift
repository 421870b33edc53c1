@testable import CredentialVaultPostgres
import CredentialVault
import Foundation
import Testing
import TestScheduling
import VaultCrypto

/// The bucketed layout (state version 3, issue 38) against a real server: each defended power of
/// the database's administrator as its own test, with the exact error; the move from version 2;
/// writers of different buckets not queueing on each other.
@Suite("PostgreSQL store: buckets (version 3), tampering, upgrade, concurrency", .blockingWork, .enabled(if: PostgresServer.shouldRun))
struct PostgresBucketTests: PostgresBucketRowQueries {
    /// How many bucket rows a new store has (the library's default bits).
    static let bucketCount = 1 << Int(PostgresStateV3.defaultBucketBits)

    private func newStore(bits: UInt8 = PostgresStateV3.defaultBucketBits,
                          memory: RollbackMemory = .disabled) async throws -> (PostgresSecretStore, VaultKey) {
        let key = try PostgresServer.newKey()
        var options = PostgresServer.options()
        options.bucketBits = bits
        options.rollbackMemory = memory
        return (try await PostgresSecretStore.create(configuration: try PostgresServer.configuration(), key: key, options: options), key)
    }

    private func reopen(_ store: PostgresSecretStore, key: VaultKey, memory: RollbackMemory = .disabled) async throws -> PostgresSecretStore {
        var options = PostgresServer.options()
        options.rollbackMemory = memory
        return try await PostgresSecretStore.open(configuration: store.configuration, key: key, options: options)
    }

    @Test("vault_buckets is created with room for in-page (HOT) updates of its rows (fillfactor 50); the entries table keeps the default")
    func tablesLeaveRoomForUpdates() throws {
        // In a schema of its own (the test database's tables already exist), dropped afterwards.
        let schema = "schema_test_\(UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased())"
        defer { _ = try? PostgresServer.psql("DROP SCHEMA \(schema) CASCADE") }
        let options = try PostgresServer.psql("""
            CREATE SCHEMA \(schema); SET search_path = \(schema);
            \(PostgresSchema.createStores.sql); \(PostgresSchema.createEntries.sql); \(PostgresSchema.createBuckets.sql);
            SELECT string_agg(relname || ' ' || coalesce(array_to_string(reloptions, ','), '-'), '; ' ORDER BY relname)
            FROM pg_class WHERE relnamespace = '\(schema)'::regnamespace AND relkind = 'r'
            """)
        #expect(options.split(separator: "\n").last == "vault_buckets fillfactor=50; vault_entries -; vault_stores -")
    }

    @Test("a new store is version 3: a 37-byte state starting with 3, and all 2^14 = 16,384 bucket rows from creation")
    func newStoreLayout() async throws {
        let (store, _) = try await newStore()
        #expect(try PostgresServer.psql("SELECT get_byte(state, 0) || ' ' || length(state) FROM vault_stores WHERE vault_id = \(vault(store))")
                == "3 37")
        #expect(try PostgresServer.psql("SELECT count(*) || ' ' || min(bucket) || ' ' || max(bucket) FROM vault_buckets WHERE vault_id = \(vault(store))")
                == "\(Self.bucketCount) 0 \(Self.bucketCount - 1)")
        // Today's release before version 3 reads the state with PostgresVaultState.open: it refuses it.
        let state = try PostgresServer.psql("SELECT encode(state, 'hex') FROM vault_stores WHERE vault_id = \(vault(store))")
        let bytes = stride(from: 0, to: state.count, by: 2).compactMap { offset -> UInt8? in
            let start = state.index(state.startIndex, offsetBy: offset)
            return UInt8(state[start..<state.index(start, offsetBy: 2)], radix: 16)
        }
        #expect(bytes.count == 37)
        #expect(throws: VaultError.self) { _ = try PostgresVaultState.open(bytes, vaultID: store.vaultID, storeName: store.storeName, keys: store.keys) }
        #expect(await errorCode { _ = try PostgresVaultState.open(bytes, vaultID: store.vaultID, storeName: store.storeName, keys: store.keys) }
                == .unsupportedVersion)
        await store.close()
    }

    @Test("an edited entry row is tampered (get, list, replacing it); verify lists it")
    func editedEntryRow() async throws {
        let (store, _) = try await newStore()
        try await store.add(NewEntry(name: "a", secret: SecureBytes("value-a")))
        try PostgresServer.psql("UPDATE vault_entries SET sealed = set_byte(sealed, 20, get_byte(sealed, 20) # 1) WHERE \(try rowCondition(store, "a"))")
        #expect(await errorCode { _ = try await store.secret(named: "a") } == .tampered)
        #expect(await errorCode { _ = try await store.list() } == .tampered)
        #expect(await errorCode { try await store.put(NewEntry(name: "a", secret: SecureBytes("over"))) } == .tampered)
        #expect(try await store.verify().failures.map(\.error.code) == [.tampered])
        await store.close()
    }

    @Test("an edited bucket row is tampered for every entry of the bucket: get, list, put, and a fresh process")
    func editedBucketRow() async throws {
        let (store, key) = try await newStore()
        try await store.add(NewEntry(name: "a", secret: SecureBytes("value-a")))
        let condition = try bucketCondition(store, "a")
        try PostgresServer.psql("UPDATE vault_buckets SET sealed = set_byte(sealed, 20, get_byte(sealed, 20) # 1) WHERE \(condition)")
        #expect(await errorCode { _ = try await store.secret(named: "a") } == .tampered)
        #expect(await errorCode { _ = try await store.list() } == .tampered)
        #expect(await errorCode { try await store.put(NewEntry(name: "a", secret: SecureBytes("over"))) } == .tampered)
        let fresh = try await reopen(store, key: key)
        #expect(await errorCode { _ = try await fresh.secret(named: "a") } == .tampered)
        await fresh.close()
        try PostgresServer.psql("UPDATE vault_buckets SET sealed = set_byte(sealed, 20, get_byte(sealed, 20) # 1) WHERE \(condition)")
        #expect(try await store.secret(named: "a") == SecureBytes("value-a"))
        await store.close()
    }

    @Test("a bucket row moved to another bucket number, or to another store of the same key, is tampered")
    func movedBucketRow() async throws {
        let (store, key) = try await newStore()
        let (first, second) = try { () -> (String, String) in
            let pair = try names(store, count: 2, sameBucket: false)
            return (pair[0], pair[1])
        }()
        try await store.add(NewEntry(name: first, secret: SecureBytes("v1")))
        let target = try bucketCondition(store, second)
        try PostgresServer.psql("UPDATE vault_buckets SET sealed = (SELECT sealed FROM vault_buckets WHERE \(try bucketCondition(store, first))) WHERE \(target)")
        #expect(await errorCode { _ = try await store.secret(named: second) } == .tampered)
        #expect(await errorCode { _ = try await store.list() } == .tampered)
        // The other store's bucket of the same number, with the same key: its store name is bound in.
        let otherConfiguration = try PostgresServer.configuration()
        let other = try await PostgresSecretStore.create(configuration: otherConfiguration, key: key, options: PostgresServer.options())
        try await other.add(NewEntry(name: first, secret: SecureBytes("other")))
        try PostgresServer.psql("""
            UPDATE vault_buckets SET sealed = (SELECT sealed FROM vault_buckets WHERE \(try bucketCondition(other, first)))
            WHERE \(try bucketCondition(store, first))
            """)
        #expect(await errorCode { _ = try await store.secret(named: first) } == .tampered)
        await other.close()
        await store.close()
    }

    @Test("two stores sharing a key with their names swapped are refused at open (the state binds the name)")
    func swappedNames() async throws {
        let key = try PostgresServer.newKey()
        let prod = try PostgresServer.configuration(storeName: "prod-" + UUID().uuidString)
        let staging = try PostgresServer.configuration(storeName: "staging-" + UUID().uuidString)
        for configuration in [prod, staging] {
            let store = try await PostgresSecretStore.create(configuration: configuration, key: key, options: PostgresServer.options())
            try await store.add(NewEntry(name: "api", secret: SecureBytes(configuration.storeName)))
            await store.close()
        }
        let swap = """
            UPDATE vault_stores SET store_name = 'swap-tmp-\(prod.storeName)' WHERE store_name = '\(prod.storeName)';
            UPDATE vault_stores SET store_name = '\(prod.storeName)' WHERE store_name = '\(staging.storeName)';
            UPDATE vault_stores SET store_name = '\(staging.storeName)' WHERE store_name = 'swap-tmp-\(prod.storeName)'
            """
        try PostgresServer.psql(swap)
        for configuration in [prod, staging] {
            #expect(await errorCode {
                _ = try await PostgresSecretStore.open(configuration: configuration, key: key, options: PostgresServer.options())
            } == .tampered)
        }
        try PostgresServer.psql(swap)
        let reopened = try await PostgresSecretStore.open(configuration: prod, key: key, options: PostgresServer.options())
        #expect(try await reopened.secret(named: "api") == SecureBytes(prod.storeName))
        await reopened.close()
    }

    @Test("an older copy of an entry row put back (its bucket lists a newer generation) is tampered, in a fresh process too")
    func oldEntryRowPutBack() async throws {
        let (store, key) = try await newStore()
        try await store.add(NewEntry(name: "a", secret: SecureBytes("old")))
        let row = try rowCondition(store, "a")
        let saved = try PostgresServer.psql("SELECT encode(sealed, 'hex') || ' ' || row_generation FROM vault_entries WHERE \(row)").split(separator: " ")
        try await store.put(NewEntry(name: "a", secret: SecureBytes("new")))
        try PostgresServer.psql("UPDATE vault_entries SET sealed = decode('\(saved[0])', 'hex'), row_generation = \(saved[1]) WHERE \(row)")
        #expect(await errorCode { _ = try await store.secret(named: "a") } == .tampered)
        let fresh = try await reopen(store, key: key)
        #expect(await errorCode { _ = try await fresh.secret(named: "a") } == .tampered)
        #expect(await errorCode { _ = try await fresh.list() } == .tampered)
        await fresh.close()
        await store.close()
    }

    @Test("an old bucket row put back with its old entry rows: refused by the store that saw the newer one and by a later process with the .buckets record, read as current by a fresh process with no memory")
    func oldBucketPutBackWithItsRows() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("vault-pgb-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (store, key) = try await newStore(memory: .directory(directory))
        try await store.add(NewEntry(name: "a", secret: SecureBytes("old")))
        let bucketRow = try bucketCondition(store, "a"), row = try rowCondition(store, "a")
        let savedBucket = try PostgresServer.psql("SELECT encode(sealed, 'hex') FROM vault_buckets WHERE \(bucketRow)")
        let savedRow = try PostgresServer.psql("SELECT encode(sealed, 'hex') || ' ' || row_generation FROM vault_entries WHERE \(row)").split(separator: " ")
        try await store.put(NewEntry(name: "a", secret: SecureBytes("new")))
        try PostgresServer.psql("""
            UPDATE vault_buckets SET sealed = decode('\(savedBucket)', 'hex') WHERE \(bucketRow);
            UPDATE vault_entries SET sealed = decode('\(savedRow[0])', 'hex'), row_generation = \(savedRow[1]) WHERE \(row)
            """)
        #expect(await errorCode { _ = try await store.secret(named: "a") } == .rollbackDetected)
        #expect(await errorCode { try await store.put(NewEntry(name: "a", secret: SecureBytes("x"))) } == .rollbackDetected)
        await store.close()   // writes pg-<id>.buckets
        let files = try FileManager.default.contentsOfDirectory(atPath: directory)
        #expect(files.filter { !$0.hasSuffix(".lock") } == ["pg-\(hex(store.vaultID)).buckets"])
        let later = try await reopen(store, key: key, memory: .directory(directory))
        #expect(await errorCode { _ = try await later.secret(named: "a") } == .rollbackDetected)
        await later.close()
        // Documented limit (docs/SECURITY.md): a process that remembers nothing cannot tell a
        // consistent older bucket from the current one; it reads the old value as current.
        let memoryless = try await reopen(store, key: key)
        #expect(try await memoryless.secret(named: "a") == SecureBytes("old"))
        await memoryless.close()
        // A rollback accepted on purpose: the record follows the restored state.
        var accepting = PostgresServer.options()
        accepting.rollbackMemory = .directory(directory)
        accepting.acceptRollback = true
        let accepted = try await PostgresSecretStore.open(configuration: store.configuration, key: key, options: accepting)
        #expect(try await accepted.secret(named: "a") == SecureBytes("old"))
        await accepted.close()
        let afterAccept = try await reopen(store, key: key, memory: .directory(directory))
        #expect(try await afterAccept.secret(named: "a") == SecureBytes("old"))
        await afterAccept.close()
    }

    @Test("a deleted entry row is tampered (deleted): get, list, verify")
    func deletedEntryRow() async throws {
        let (store, key) = try await newStore()
        try await store.add(NewEntry(name: "a", secret: SecureBytes("value-a")))
        try await store.add(NewEntry(name: "b", secret: SecureBytes("value-b")))
        try PostgresServer.psql("DELETE FROM vault_entries WHERE \(try rowCondition(store, "a"))")
        #expect(await errorCode { _ = try await store.secret(named: "a") } == .tampered)
        #expect(await errorCode { _ = try await store.list() } == .tampered)
        #expect(await errorCode { _ = try await store.verify() } == .tampered)
        let fresh = try await reopen(store, key: key)
        #expect(await errorCode { _ = try await fresh.secret(named: "a") } == .tampered)
        #expect(try await fresh.secret(named: "b") == SecureBytes("value-b"))
        await fresh.close()
        await store.close()
    }

    @Test("a deleted bucket row (with or without its entries) is tampered: get, list, put, verify")
    func deletedBucketRow() async throws {
        let (store, key) = try await newStore()
        try await store.add(NewEntry(name: "a", secret: SecureBytes("value-a")))
        try PostgresServer.psql("""
            DELETE FROM vault_buckets WHERE \(try bucketCondition(store, "a"));
            DELETE FROM vault_entries WHERE \(try rowCondition(store, "a"))
            """)
        let fresh = try await reopen(store, key: key)
        for reader in [store, fresh] {
            #expect(await errorCode { _ = try await reader.secret(named: "a") } == .tampered)
            #expect(await errorCode { _ = try await reader.list() } == .tampered)
            #expect(await errorCode { try await reader.put(NewEntry(name: "a", secret: SecureBytes("x"))) } == .tampered)
            #expect(await errorCode { _ = try await reader.verify() } == .tampered)
        }
        await fresh.close()
        await store.close()
    }

    @Test("the whole database rolled back (UPDATE back to a copy) is refused by a later process through the .buckets record")
    func wholeDatabaseRollback() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("vault-pgb-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (store, key) = try await newStore(memory: .directory(directory))
        try await store.add(NewEntry(name: "token", secret: SecureBytes("old")))
        let snapshot = "snap_" + UUID().uuidString.replacingOccurrences(of: "-", with: "")
        let id = vault(store)
        try PostgresServer.psql("CREATE TABLE \(snapshot)_b AS SELECT * FROM vault_buckets WHERE vault_id = \(id); "
                                + "CREATE TABLE \(snapshot)_e AS SELECT * FROM vault_entries WHERE vault_id = \(id)")
        try await store.put(NewEntry(name: "token", secret: SecureBytes("new")))
        try await store.add(NewEntry(name: "other", secret: SecureBytes("v")))
        await store.close()
        try PostgresServer.psql("""
            DELETE FROM vault_entries WHERE vault_id = \(id); DELETE FROM vault_buckets WHERE vault_id = \(id);
            INSERT INTO vault_buckets SELECT * FROM \(snapshot)_b; INSERT INTO vault_entries SELECT * FROM \(snapshot)_e;
            DROP TABLE \(snapshot)_b; DROP TABLE \(snapshot)_e
            """)
        let later = try await reopen(store, key: key, memory: .directory(directory))
        #expect(await errorCode { _ = try await later.secret(named: "token") } == .rollbackDetected)
        #expect(await errorCode { _ = try await later.list() } == .rollbackDetected)
        await later.close()
    }

    @Test("a version 2 store (as the previous release writes it) opens, reads and writes; upgradeLayout moves it to 3 once")
    func upgradeFromVersion2() async throws {
        let key = try PostgresServer.newKey()
        let configuration = try PostgresServer.configuration()
        var legacy = PostgresServer.options()
        legacy.layoutVersion = 2
        let old = try await PostgresSecretStore.create(configuration: configuration, key: key, options: legacy)
        try await old.add(NewEntry(name: "a", secret: SecureBytes("value-a")))
        try await old.put(contentsOf: (0..<50).map { NewEntry(name: "bulk-\($0)", secret: SecureBytes("v\($0)")) })
        await old.close()
        let stateQuery = "SELECT get_byte(state, 0) FROM vault_stores WHERE store_name = '\(configuration.storeName)'"
        #expect(try PostgresServer.psql(stateQuery) == "2")
        let store = try await PostgresSecretStore.open(configuration: configuration, key: key, options: PostgresServer.options())
        let other = try await PostgresSecretStore.open(configuration: configuration, key: key, options: PostgresServer.options())
        #expect(store.layout.withLock { $0 } == .single)
        try await store.put(NewEntry(name: "a", secret: SecureBytes("value-a2")))
        #expect(store.generation == 3)
        let moved = try await store.upgradeLayout()
        #expect((moved.previousVersion, moved.version, moved.changed) == (2, 3, true))
        #expect(try PostgresServer.psql(stateQuery) == "3")
        #expect(try PostgresServer.psql("SELECT count(*) FROM vault_buckets b JOIN vault_stores s USING (vault_id) WHERE s.store_name = '\(configuration.storeName)'")
                == "\(Self.bucketCount)")
        #expect(try await store.secret(named: "a") == SecureBytes("value-a2"))
        #expect(try await store.list().count == 51)
        let report = try await store.verify()
        #expect((report.entriesChecked, report.isIntact, report.generation) == (51, true, 3 * UInt64(Self.bucketCount)))
        // Once more: unchanged.
        let again = try await store.upgradeLayout()
        #expect((again.previousVersion, again.version, again.changed) == (3, 3, false))
        // A process that opened it as version 2 meanwhile follows on its next read and write.
        #expect(try await other.secret(named: "bulk-7") == SecureBytes("v7"))
        try await other.put(NewEntry(name: "bulk-7", secret: SecureBytes("after")))
        #expect(other.layout.withLock { $0 } == .buckets(bits: PostgresStateV3.defaultBucketBits))
        #expect(try await store.secret(named: "bulk-7") == SecureBytes("after"))
        await other.close()
        await store.close()
    }

    @Test("a version 1 store upgrades too (previous version 1)")
    func upgradeFromVersion1() async throws {
        let key = try PostgresServer.newKey()
        let configuration = try PostgresServer.configuration()
        var legacy = PostgresServer.options()
        legacy.layoutVersion = 2
        let store = try await PostgresSecretStore.create(configuration: configuration, key: key, options: legacy)
        try await store.add(NewEntry(name: "a", secret: SecureBytes("value-a")))
        let lookup = try lookup(store, "a")
        var plain = [UInt8]()
        plain += withUnsafeBytes(of: store.generation.bigEndian, Array.init)
        plain += withUnsafeBytes(of: UInt32(1).bigEndian, Array.init)
        plain += try PostgresVaultState.digest(of: [(lookup, store.generation)])
        let version1 = try AES256GCM.seal(plain, using: store.keys.state, authenticating: PostgresLayout.stateAADLabel + store.vaultID).combined
        try PostgresServer.psql("UPDATE vault_stores SET state = decode('\(hex(version1))', 'hex') WHERE store_name = '\(configuration.storeName)'")
        let moved = try await store.upgradeLayout()
        #expect((moved.previousVersion, moved.version, moved.changed) == (1, 3, true))
        #expect(try await store.secret(named: "a") == SecureBytes("value-a"))
        await store.close()
    }

    @Test("put(contentsOf:) is all or nothing: one name taken (not replacing) writes none")
    func bulkAllOrNothing() async throws {
        let (store, _) = try await newStore()
        try await store.add(NewEntry(name: "taken", secret: SecureBytes("v")))
        let entries = (0..<2_500).map { NewEntry(name: "e\($0)", secret: SecureBytes("v\($0)")) } + [NewEntry(name: "taken", secret: SecureBytes("w"))]
        #expect(await errorCode { try await store.put(contentsOf: entries, replacing: false) } == .alreadyExists)
        #expect(try await store.list().map(\.name) == ["taken"])
        try await store.put(contentsOf: entries)
        #expect(try await store.list().count == 2_501)
        #expect(try await store.secret(named: "taken") == SecureBytes("w"))
        #expect(try await store.verify().isIntact)
        await store.close()
    }

    @Test("destroy removes the bucket rows with the store (ON DELETE CASCADE); other stores keep theirs")
    func destroyRemovesBuckets() async throws {
        let (store, _) = try await newStore()
        let (neighbour, _) = try await newStore()
        try await store.add(NewEntry(name: "a", secret: SecureBytes("v")))
        let id = vault(store)
        await store.close()
        #expect(try await PostgresSecretStore.destroy(configuration: store.configuration, options: PostgresServer.options()))
        #expect(try PostgresServer.psql("SELECT count(*) FROM vault_buckets WHERE vault_id = \(id)") == "0")
        #expect(try PostgresServer.psql("SELECT count(*) FROM vault_entries WHERE vault_id = \(id)") == "0")
        #expect(try PostgresServer.psql("SELECT count(*) FROM vault_buckets WHERE vault_id = \(vault(neighbour))") == "\(Self.bucketCount)")
        await neighbour.close()
    }

    @Test("a transaction holding one bucket does not delay a write to another bucket; a write to the same bucket waits for it")
    func differentBucketsDoNotQueue() async throws {
        let (store, key) = try await newStore()
        let pair = try names(store, count: 2, sameBucket: false)
        let same = try names(store, count: 2, sameBucket: true)
        let writer = try await reopen(store, key: key)
        let held = try bucket(store, pair[0]), sameHeld = try bucket(store, same[0])
        let release = AsyncStream<Void>.makeStream()
        let holding = AsyncStream<Void>.makeStream()
        let holder = Task {
            try await store.client.withTransaction(logger: store.options.logger) { connection in
                try await connection.query("""
                    SELECT 1 FROM vault_buckets WHERE vault_id = decode(\(hex(store.vaultID)), 'hex')
                    AND bucket IN (\(Int32(held)), \(Int32(sameHeld))) FOR UPDATE
                    """, logger: store.options.logger)
                holding.continuation.yield()
                for await _ in release.stream { break }
            }
        }
        for await _ in holding.stream { break }
        // Another bucket: done while the first is held.
        try await writer.put(NewEntry(name: pair[1], secret: SecureBytes("free")))
        // The held bucket: still waiting after a while, done once released.
        let done = DoneFlag()
        let waiting = Task {
            try await writer.put(NewEntry(name: same[1], secret: SecureBytes("queued")))
            done.set()
        }
        try await Task.sleep(for: .milliseconds(500))
        #expect(!done.isSet, "a write to the held bucket waited for it")
        release.continuation.yield()
        try await holder.value
        try await waiting.value
        #expect(try await writer.secret(named: same[1]) == SecureBytes("queued"))
        await writer.close()
        await store.close()
    }
}

/// Set once, read from another task.
final class DoneFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    func set() { lock.lock(); value = true; lock.unlock() }
    var isSet: Bool { lock.lock(); defer { lock.unlock() }; return value }
}
