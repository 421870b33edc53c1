@testable import CredentialVaultPostgres
import CredentialVault
import Foundation
import Testing
import TestScheduling
import VaultCrypto

/// The PostgreSQL store against a real server (Debian's PostgreSQL, started by scripts/test).
@Suite("PostgreSQL store: round trip, ciphertext only, tampering", .blockingWork, .enabled(if: PostgresServer.shouldRun))
struct PostgresStoreTests {
    private func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    private func rowCondition(_ store: PostgresSecretStore, name: String, owner: String = "") throws -> String {
        let lookup = try PostgresRowCodec.lookup(owner: owner, name: name, keys: store.keys)
        return "vault_id = decode('\(hex(store.vaultID))', 'hex') AND lookup = decode('\(hex(lookup))', 'hex')"
    }

    @Test("add, get, put (keeps createdAt), list, remove, reopen; the generation counts writes")
    func roundTrip() async throws {
        let configuration = try PostgresServer.configuration()
        let key = try PostgresServer.newKey()
        let store = try await PostgresSecretStore.create(configuration: configuration, key: key, options: PostgresServer.options())
        try await store.add(NewEntry(name: "github", secret: SecureBytes("ghp-first"), kind: .password, label: "work"))
        try await store.add(NewEntry(name: "access", owner: "user-1", secret: SecureBytes("at-1"), kind: .accessToken,
                                     expiresAt: Date(timeIntervalSince1970: 2_000_000_000)))
        #expect(await errorCode { try await store.add(NewEntry(name: "github", secret: SecureBytes("again"))) } == .alreadyExists)
        let first = try await store.entry(named: "github")
        #expect(first.secret == SecureBytes("ghp-first"))
        #expect(first.metadata.label == "work")
        try await Task.sleep(for: .milliseconds(20))
        try await store.put(NewEntry(name: "github", secret: SecureBytes("ghp-second"), kind: .password))
        let second = try await store.entry(named: "github")
        #expect(second.secret == SecureBytes("ghp-second"))
        #expect(second.metadata.createdAt == first.metadata.createdAt)
        #expect(second.metadata.updatedAt > first.metadata.updatedAt)
        let access = try await store.entry(named: "access", owner: "user-1")
        #expect(access.metadata.expiresAt == Date(timeIntervalSince1970: 2_000_000_000))
        #expect(access.metadata.kind == .accessToken)
        #expect(try await store.list().map(\.name) == ["github", "access"])
        #expect(try await store.list(owner: "user-1").map(\.name) == ["access"])
        try await store.remove(named: "github")
        #expect(await errorCode { _ = try await store.secret(named: "github") } == .notFound)
        #expect(await errorCode { try await store.remove(named: "github") } == .notFound)
        #expect(store.generation == 4)
        await store.close()

        let reopened = try await PostgresSecretStore.open(configuration: configuration, key: key, options: PostgresServer.options())
        #expect(try await reopened.secret(named: "access", owner: "user-1") == SecureBytes("at-1"))
        let report = try await reopened.verify()
        #expect((report.generation, report.entriesChecked, report.isIntact) == (4, 1, true))
        await reopened.close()
    }

    @Test("a wrong key, a passphrase for a key-file vault, a missing store and a taken name each fail on their own")
    func openFailures() async throws {
        let configuration = try PostgresServer.configuration()
        let key = try PostgresServer.newKey()
        let store = try await PostgresSecretStore.create(configuration: configuration, key: key, options: PostgresServer.options())
        await store.close()
        #expect(await errorCode {
            _ = try await PostgresSecretStore.open(configuration: configuration, key: try PostgresServer.newKey(), options: PostgresServer.options())
        } == .wrongKey)
        #expect(await errorCode {
            _ = try await PostgresSecretStore.open(configuration: configuration, key: .passphrase(SecureBytes("a long enough passphrase")),
                                                   options: PostgresServer.options())
        } == .wrongKey)
        #expect(await errorCode {
            _ = try await PostgresSecretStore.open(configuration: try PostgresServer.configuration(), key: key, options: PostgresServer.options())
        } == .notFound)
        #expect(await errorCode {
            _ = try await PostgresSecretStore.create(configuration: configuration, key: key, options: PostgresServer.options())
        } == .alreadyExists)
        // A passphrase vault opens with its passphrase.
        let passConfiguration = try PostgresServer.configuration()
        let passphrase = VaultKey.passphrase(SecureBytes("correct horse battery staple"))
        let passStore = try await PostgresSecretStore.create(configuration: passConfiguration, key: passphrase, options: PostgresServer.options())
        try await passStore.add(NewEntry(name: "n", secret: SecureBytes("v")))
        await passStore.close()
        let again = try await PostgresSecretStore.open(configuration: passConfiguration, key: passphrase, options: PostgresServer.options())
        #expect(try await again.secret(named: "n") == SecureBytes("v"))
        await again.close()
    }

    @Test("the database holds no name, owner, label or secret, in any column")
    func ciphertextOnly() async throws {
        let configuration = try PostgresServer.configuration()
        let store = try await PostgresSecretStore.create(configuration: configuration, key: try PostgresServer.newKey(),
                                                         options: PostgresServer.options())
        try await store.add(NewEntry(name: "name-PLAINTEXT-marker", owner: "owner-PLAINTEXT-marker",
                                     secret: SecureBytes("secret-PLAINTEXT-marker"), label: "label-PLAINTEXT-marker"))
        let dump = try PostgresServer.psql("""
            SELECT encode(s.vault_id, 'hex') || encode(s.key_slot, 'hex') || encode(s.state, 'hex') || s.store_name
                   || coalesce(string_agg(encode(e.lookup, 'hex') || e.row_generation || encode(e.sealed, 'hex'), ','), '')
            FROM vault_stores s LEFT JOIN vault_entries e ON e.vault_id = s.vault_id
            WHERE s.store_name = '\(configuration.storeName)' GROUP BY s.vault_id, s.key_slot, s.state, s.store_name
            """)
        #expect(dump.count > 200)
        #expect(!dump.contains(hex(Array("PLAINTEXT".utf8))))
        #expect(!dump.contains("PLAINTEXT"))
        await store.close()
    }

    @Test("a flipped byte in an entry row, the state row or the key slot is refused")
    func flippedBytes() async throws {
        let configuration = try PostgresServer.configuration()
        let key = try PostgresServer.newKey()
        let store = try await PostgresSecretStore.create(configuration: configuration, key: key, options: PostgresServer.options())
        try await store.add(NewEntry(name: "a", secret: SecureBytes("value-a")))
        let row = try rowCondition(store, name: "a")
        for offset in [0, 12, 20, 30] {
            try PostgresServer.psql("UPDATE vault_entries SET sealed = set_byte(sealed, \(offset), get_byte(sealed, \(offset)) # 1) WHERE \(row)")
            #expect(await errorCode { _ = try await store.secret(named: "a") } == .tampered)
            #expect(await errorCode { _ = try await store.list() } == .tampered)
            #expect(await errorCode { try await store.put(NewEntry(name: "a", secret: SecureBytes("over"))) } == .tampered)
            // verify() lists the row that fails instead of throwing, as SecretStore.verify() does.
            let report = try await store.verify()
            #expect((report.entriesChecked, report.failures.map(\.error.code)) == (1, [.tampered]))
            try PostgresServer.psql("UPDATE vault_entries SET sealed = set_byte(sealed, \(offset), get_byte(sealed, \(offset)) # 1) WHERE \(row)")
            #expect(try await store.secret(named: "a") == SecureBytes("value-a"))
        }
        let storeRow = "store_name = '\(configuration.storeName)'"
        try PostgresServer.psql("UPDATE vault_stores SET state = set_byte(state, 14, get_byte(state, 14) # 1) WHERE \(storeRow)")
        // A new client refuses it at once. A version 3 state holds no generation (only the store's
        // name and layout, both also bound by every bucket row), so it is read at open only: this
        // store goes on reading through its bucket rows (their flips are PostgresBucketTamperTests').
        #expect(await errorCode {
            _ = try await PostgresSecretStore.open(configuration: configuration, key: key, options: PostgresServer.options())
        } == .tampered)
        #expect(try await store.secret(named: "a") == SecureBytes("value-a"))
        try PostgresServer.psql("UPDATE vault_stores SET state = set_byte(state, 14, get_byte(state, 14) # 1) WHERE \(storeRow)")
        try PostgresServer.psql("UPDATE vault_stores SET key_slot = set_byte(key_slot, 60, get_byte(key_slot, 60) # 1) WHERE \(storeRow)")
        #expect(await errorCode {
            _ = try await PostgresSecretStore.open(configuration: configuration, key: key, options: PostgresServer.options())
        } == .wrongKey)
        try PostgresServer.psql("UPDATE vault_stores SET key_slot = set_byte(key_slot, 60, get_byte(key_slot, 60) # 1) WHERE \(storeRow)")
        // The generation column is bound too.
        try PostgresServer.psql("UPDATE vault_entries SET row_generation = row_generation + 1 WHERE \(row)")
        #expect(await errorCode { _ = try await store.secret(named: "a") } == .tampered)
        try PostgresServer.psql("UPDATE vault_entries SET row_generation = row_generation - 1 WHERE \(row)")
        #expect(try await store.verify().entriesChecked == 1)
        await store.close()
    }

    @Test("a value moved to another row, a row copied from another vault, a deleted row and an old row put back are refused")
    func movedCopiedDeletedAndRolledBackRows() async throws {
        let key = try PostgresServer.newKey()
        let store = try await PostgresSecretStore.create(configuration: try PostgresServer.configuration(), key: key,
                                                         options: PostgresServer.options())
        try await store.add(NewEntry(name: "a", secret: SecureBytes("value-a")))
        try await store.add(NewEntry(name: "b", secret: SecureBytes("value-b")))
        let a = try rowCondition(store, name: "a"), b = try rowCondition(store, name: "b")
        // Moved: b's sealed value (and its generation) under a's lookup.
        let saved = try PostgresServer.psql("SELECT encode(sealed, 'hex') || ' ' || row_generation FROM vault_entries WHERE \(a)")
        try PostgresServer.psql("UPDATE vault_entries SET (sealed, row_generation) = (SELECT sealed, row_generation FROM vault_entries WHERE \(b)) WHERE \(a)")
        #expect(await errorCode { _ = try await store.secret(named: "a") } == .tampered)
        let parts = saved.split(separator: " ")
        try PostgresServer.psql("UPDATE vault_entries SET sealed = decode('\(parts[0])', 'hex'), row_generation = \(parts[1]) WHERE \(a)")
        #expect(try await store.secret(named: "a") == SecureBytes("value-a"))

        // Copied from another vault, with this vault's id and the same name's lookup of that vault.
        let other = try await PostgresSecretStore.create(configuration: try PostgresServer.configuration(), key: try PostgresServer.newKey(),
                                                         options: PostgresServer.options())
        try await other.add(NewEntry(name: "a", secret: SecureBytes("forged")))
        try await other.add(NewEntry(name: "c", secret: SecureBytes("forged-c")))
        let otherA = try rowCondition(other, name: "a")
        try PostgresServer.psql("UPDATE vault_entries SET (sealed, row_generation) = (SELECT sealed, row_generation FROM vault_entries WHERE \(otherA)) WHERE \(a)")
        #expect(await errorCode { _ = try await store.secret(named: "a") } == .tampered)
        try PostgresServer.psql("UPDATE vault_entries SET sealed = decode('\(parts[0])', 'hex'), row_generation = \(parts[1]) WHERE \(a)")

        // Deleted: the state still counts it.
        let savedB = try PostgresServer.psql("SELECT encode(lookup, 'hex') || ' ' || row_generation || ' ' || encode(sealed, 'hex') FROM vault_entries WHERE \(b)")
        try PostgresServer.psql("DELETE FROM vault_entries WHERE \(b)")
        #expect(await errorCode { _ = try await store.list() } == .tampered)
        #expect(await errorCode { _ = try await store.secret(named: "b") } == .tampered)
        let bParts = savedB.split(separator: " ")
        try PostgresServer.psql("""
            INSERT INTO vault_entries (vault_id, lookup, row_generation, sealed)
            VALUES (decode('\(hex(store.vaultID))', 'hex'), decode('\(bParts[0])', 'hex'), \(bParts[1]), decode('\(bParts[2])', 'hex'))
            """)
        #expect(try await store.verify().entriesChecked == 2)

        // An older version of a row put back after a newer write (with its own, older generation).
        try await store.put(NewEntry(name: "a", secret: SecureBytes("value-a2")))
        try PostgresServer.psql("UPDATE vault_entries SET sealed = decode('\(parts[0])', 'hex'), row_generation = \(parts[1]) WHERE \(a)")
        #expect(await errorCode { _ = try await store.list() } == .tampered)
        // A write that replaces it reads it (for its creation time) and refuses it too.
        #expect(await errorCode { try await store.put(NewEntry(name: "a", secret: SecureBytes("a3"))) } == .tampered)
        // get refuses it too (issue 25, point 6): the sealed state lists each row's generation.
        #expect(await errorCode { _ = try await store.secret(named: "a") } == .tampered)
        let fresh = try await PostgresSecretStore.open(configuration: store.configuration, key: key, options: PostgresServer.options())
        #expect(await errorCode { _ = try await fresh.secret(named: "a") } == .tampered, "a new client, with no cached state, too")
        #expect(try await fresh.secret(named: "b") == SecureBytes("value-b"), "the other rows still read")
        await fresh.close()
        await store.close()
        await other.close()
    }

    @Test("secret(named:) reads with a prepared statement; a connection that lost it (a pooler's DISCARD) is read unprepared from then on")
    func preparedReadAndFallback() async throws {
        var configuration = try PostgresServer.configuration()
        configuration.maximumConnections = 1   // one connection: the statements below run where the store reads
        let store = try await PostgresSecretStore.create(configuration: configuration, key: try PostgresServer.newKey(),
                                                         options: PostgresServer.options())
        try await store.add(NewEntry(name: "a", secret: SecureBytes("value-a")))
        #expect(try await store.secret(named: "a") == SecureBytes("value-a"))
        func preparedOnConnection() async throws -> Int {
            var count = 0
            for row in try await store.client.rows(
                "SELECT count(*)::int FROM pg_prepared_statements WHERE name = \(PostgresBucketRead.name)") { count = try row.decode(Int.self) }
            return count
        }
        #expect(try await preparedOnConnection() == 1)
        let preparedBefore = store.preparedReads.load(ordering: .relaxed)
        #expect(preparedBefore)
        // What PgBouncer's server_reset_query (DISCARD ALL) does between clients: the statement is
        // gone from the server while the driver still thinks it is prepared (SQLSTATE 26000).
        _ = try await store.client.rows("DEALLOCATE ALL")
        #expect(try await store.secret(named: "a") == SecureBytes("value-a"))
        let preparedAfter = store.preparedReads.load(ordering: .relaxed)
        #expect(!preparedAfter)
        #expect(await errorCode { _ = try await store.secret(named: "missing") } == .notFound)
        // The unprepared read still checks the row against the sealed state: an older copy of the
        // row put back after a newer write is refused.
        let a = try rowCondition(store, name: "a")
        let saved = try PostgresServer.psql("SELECT encode(sealed, 'hex') || ' ' || row_generation FROM vault_entries WHERE \(a)")
            .split(separator: " ")
        try await store.put(NewEntry(name: "a", secret: SecureBytes("value-a2")))
        #expect(try await store.secret(named: "a") == SecureBytes("value-a2"))
        try PostgresServer.psql("UPDATE vault_entries SET sealed = decode('\(saved[0])', 'hex'), row_generation = \(saved[1]) WHERE \(a)")
        #expect(await errorCode { _ = try await store.secret(named: "a") } == .tampered)
        let stillUnprepared = !store.preparedReads.load(ordering: .relaxed)
        #expect(stillUnprepared)
        await store.close()
    }

    @Test("one store used by 16 tasks at once (puts and gets interleaved): no false rollback from a generation another task saw first")
    func concurrentOperationsOfOneStoreSeeNoFalseRollback() async throws {
        let store = try await PostgresSecretStore.create(configuration: try PostgresServer.configuration(), key: try PostgresServer.newKey(),
                                                         options: PostgresServer.options())
        for index in 0..<4 { try await store.add(NewEntry(name: "e\(index)", secret: SecureBytes("v"))) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<16 {
                group.addTask {
                    for round in 0..<15 {
                        if (task + round) % 2 == 0 {
                            try await store.put(NewEntry(name: "e\((task + round) % 4)", secret: SecureBytes("v\(round)")))
                        } else {
                            _ = try await store.secret(named: "e\((task + round) % 4)")
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try await store.verify().entriesChecked == 4)
        await store.close()
    }

    @Test("a fleet session's old refresh token put back is refused before it reaches the refresher")
    func aReplayedRefreshTokenRowIsRefusedByTheSingleFlightRead() async throws {
        let store = try await PostgresSecretStore.create(configuration: try PostgresServer.configuration(), key: try PostgresServer.newKey(),
                                                         options: PostgresServer.options())
        let old = Credentials(accessToken: SecureBytes("at-1"), refreshToken: SecureBytes("rt-1"), expiresAt: Date().addingTimeInterval(-60))
        try await store.saveCredentials(old, session: "billing")
        let row = try rowCondition(store, name: PostgresSecretStore.SessionEntryNames.refreshToken, owner: "billing")
        let saved = try PostgresServer.psql("SELECT encode(sealed, 'hex') || ' ' || row_generation FROM vault_entries WHERE \(row)")
        try await store.saveCredentials(Credentials(accessToken: SecureBytes("at-2"), refreshToken: SecureBytes("rt-2"),
                                                    expiresAt: Date().addingTimeInterval(-60)), session: "billing")
        let parts = saved.split(separator: " ")
        try PostgresServer.psql("UPDATE vault_entries SET sealed = decode('\(parts[0])', 'hex'), row_generation = \(parts[1]) WHERE \(row)")
        let sent = SentTokens()
        #expect(await errorCode {
            _ = try await store.validCredentials(session: "billing", isValid: { _ in false }) { token in
                sent.add(token)
                return Credentials(accessToken: SecureBytes("at-3"), expiresAt: Date().addingTimeInterval(3600))
            }
        } == .tampered)
        #expect(sent.count == 0, "the replayed refresh token was never sent")
        await store.close()
    }

    @Test("two stores sharing a key with their names swapped by the database's administrator are refused (issue 25, point 5)")
    func swappedStoreNames() async throws {
        let key = try PostgresServer.newKey()
        let prod = try PostgresServer.configuration(storeName: "prod-" + UUID().uuidString)
        let staging = try PostgresServer.configuration(storeName: "staging-" + UUID().uuidString)
        let prodStore = try await PostgresSecretStore.create(configuration: prod, key: key, options: PostgresServer.options())
        let stagingStore = try await PostgresSecretStore.create(configuration: staging, key: key, options: PostgresServer.options())
        try await prodStore.add(NewEntry(name: "api", secret: SecureBytes("prod-secret")))
        try await stagingStore.add(NewEntry(name: "api", secret: SecureBytes("staging-secret")))
        await prodStore.close()
        await stagingStore.close()
        try PostgresServer.psql("""
            UPDATE vault_stores SET store_name = 'swap-tmp' WHERE store_name = '\(prod.storeName)';
            UPDATE vault_stores SET store_name = '\(prod.storeName)' WHERE store_name = '\(staging.storeName)';
            UPDATE vault_stores SET store_name = '\(staging.storeName)' WHERE store_name = 'swap-tmp'
            """)
        #expect(await errorCode { _ = try await PostgresSecretStore.open(configuration: prod, key: key, options: PostgresServer.options()) }
                == .tampered)
        #expect(await errorCode { _ = try await PostgresSecretStore.open(configuration: staging, key: key, options: PostgresServer.options()) }
                == .tampered)
        // Swapped back, both open and read their own secret.
        try PostgresServer.psql("""
            UPDATE vault_stores SET store_name = 'swap-tmp' WHERE store_name = '\(prod.storeName)';
            UPDATE vault_stores SET store_name = '\(prod.storeName)' WHERE store_name = '\(staging.storeName)';
            UPDATE vault_stores SET store_name = '\(staging.storeName)' WHERE store_name = 'swap-tmp'
            """)
        let reopened = try await PostgresSecretStore.open(configuration: prod, key: key, options: PostgresServer.options())
        #expect(try await reopened.secret(named: "api") == SecureBytes("prod-secret"))
        await reopened.close()
    }

    @Test("a store whose state row was written by the previous version (1) still opens, and its next write re-seals it as version 2")
    func aVersion1StateIsReadAndUpgradedByTheNextWrite() async throws {
        let configuration = try PostgresServer.configuration()
        let key = try PostgresServer.newKey()
        var legacy = PostgresServer.options()
        legacy.layoutVersion = 2
        let store = try await PostgresSecretStore.create(configuration: configuration, key: key, options: legacy)
        try await store.add(NewEntry(name: "a", secret: SecureBytes("value-a")))
        // The state as version 1 wrote it: generation, count, digest; the vault id alone as associated data.
        let lookup = try PostgresRowCodec.lookup(owner: "", name: "a", keys: store.keys)
        var plain = [UInt8]()
        plain += withUnsafeBytes(of: store.generation.bigEndian, Array.init)
        plain += withUnsafeBytes(of: UInt32(1).bigEndian, Array.init)
        plain += try PostgresVaultState.digest(of: [(lookup, store.generation)])
        let version1 = try AES256GCM.seal(plain, using: store.keys.state, authenticating: PostgresLayout.stateAADLabel + store.vaultID).combined
        #expect(version1.count == PostgresLayout.stateV1SealedLength)
        let storeRow = "store_name = '\(configuration.storeName)'"
        try PostgresServer.psql("UPDATE vault_stores SET state = decode('\(hex(version1))', 'hex') WHERE \(storeRow)")
        let old = try await PostgresSecretStore.open(configuration: configuration, key: key, options: PostgresServer.options())
        #expect(try await old.secret(named: "a") == SecureBytes("value-a"))
        #expect(try await old.verify().entriesChecked == 1)
        try await old.add(NewEntry(name: "b", secret: SecureBytes("value-b")))
        let version = try PostgresServer.psql("SELECT get_byte(state, 0) || ' ' || length(state) FROM vault_stores WHERE \(storeRow)")
        let fields = version.split(separator: " ").compactMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        #expect(fields.first == 2 && (fields.last ?? 0) > PostgresLayout.stateV1SealedLength, "re-sealed as version 2: \(version)")
        await old.close()
        await store.close()
    }

    @Test("a whole database state rolled back is refused by a client that remembers a newer generation")
    func rollbackOfTheWholeState() async throws {
        let configuration = try PostgresServer.configuration()
        let key = try PostgresServer.newKey()
        let store = try await PostgresSecretStore.create(configuration: configuration, key: key, options: PostgresServer.options())
        try await store.add(NewEntry(name: "token", secret: SecureBytes("old")))
        let vault = "decode('\(hex(store.vaultID))', 'hex')"
        let snapshot = "snap_" + UUID().uuidString.replacingOccurrences(of: "-", with: "")
        try PostgresServer.psql("CREATE TABLE \(snapshot)_s AS SELECT * FROM vault_stores WHERE vault_id = \(vault); "
                                + "CREATE TABLE \(snapshot)_b AS SELECT * FROM vault_buckets WHERE vault_id = \(vault); "
                                + "CREATE TABLE \(snapshot)_e AS SELECT * FROM vault_entries WHERE vault_id = \(vault)")
        try await store.put(NewEntry(name: "token", secret: SecureBytes("new")))
        let remembered = store.generation
        try PostgresServer.psql("""
            DELETE FROM vault_entries WHERE vault_id = \(vault);
            DELETE FROM vault_buckets WHERE vault_id = \(vault);
            UPDATE vault_stores SET state = (SELECT state FROM \(snapshot)_s) WHERE vault_id = \(vault);
            INSERT INTO vault_buckets SELECT * FROM \(snapshot)_b;
            INSERT INTO vault_entries SELECT * FROM \(snapshot)_e;
            DROP TABLE \(snapshot)_s; DROP TABLE \(snapshot)_b; DROP TABLE \(snapshot)_e
            """)
        // The running client has seen the newer generation; a new one told of it refuses too (for a
        // version 3 store, the minimum generation is the sum of the buckets', checked by list and verify).
        #expect(await errorCode { _ = try await store.secret(named: "token") } == .rollbackDetected)
        #expect(await errorCode { try await store.put(NewEntry(name: "token", secret: SecureBytes("x"))) } == .rollbackDetected)
        let told = try await PostgresSecretStore.open(configuration: configuration, key: key,
                                                      options: PostgresServer.options(minimumGeneration: remembered))
        #expect(await errorCode { _ = try await told.list() } == .rollbackDetected)
        #expect(await errorCode { _ = try await told.verify() } == .rollbackDetected)
        await told.close()
        // A client that never saw the newer state reads the consistent older one.
        let naive = try await PostgresSecretStore.open(configuration: configuration, key: key, options: PostgresServer.options())
        #expect(try await naive.secret(named: "token") == SecureBytes("old"))
        await naive.close()
        await store.close()
    }
}

/// Tokens a refresher was handed.
final class SentTokens: @unchecked Sendable {
    private let lock = NSLock()
    private var tokens: [SecureBytes] = []
    func add(_ token: SecureBytes) { lock.lock(); tokens.append(token); lock.unlock() }
    var count: Int { lock.lock(); defer { lock.unlock() }; return tokens.count }
}
