@testable import CredentialVaultPostgres
import CredentialVault
import Foundation
import Testing
import TestScheduling
import VaultCrypto

/// Issue 38: `vault_entries`' primary key carries `row_generation` (`INCLUDE`), so that the read
/// before a write of one entry (`PostgresBucketSnapshot`: every (lookup, row generation) of the
/// bucket) is an index-only scan, not one heap page per row of the bucket. Tables made before keep
/// their key and work the same; docs/CLI.md gives the two statements that move them to the new one.
/// A server of its own: the test changes the tables' key.
@Suite("PostgreSQL store: the covering primary key of vault_entries", .blockingWork, .serialized,
       .enabled(if: PostgresServer.shouldRun, "no PostgreSQL server (VAULT_POSTGRES_URL)"))
struct PostgresCoveringKeyTests {
    /// `indnatts|indnkeyatts` of `vault_entries`' primary key: `3|2` with row_generation included.
    static func primaryKeyShape(url: String) throws -> String {
        try PostgresServer.psql("""
            SELECT indnatts || '|' || indnkeyatts FROM pg_index
            WHERE indrelid = 'vault_entries'::regclass AND indisprimary
            """, url: url)
    }

    /// The plan of the write's snapshot statement, generic (as a pooled connection runs it).
    static func snapshotPlan(url: String) throws -> String {
        let vaultID = try PostgresServer.psql("SELECT encode(vault_id, 'hex') FROM vault_stores LIMIT 1", url: url)
        try PostgresServer.psql("VACUUM ANALYZE vault_entries", url: url)
        return try PostgresServer.psql("""
            SET plan_cache_mode = force_generic_plan; SET enable_seqscan = off; SET enable_bitmapscan = off;
            PREPARE snapshot(bytea, integer, bytea, bytea, bytea) AS \(PostgresBucketSnapshot.sql);
            EXPLAIN EXECUTE snapshot(decode('\(vaultID)', 'hex'), 0, '\\x00'::bytea, '\\xffffffff'::bytea, '\\x00'::bytea)
            """, url: url)
    }

    @Test("a new store's key includes row_generation; the write's read of its bucket is an index-only scan",
          .timeLimit(.minutes(5)))
    func newTablesHaveTheCoveringKey() async throws {
        let server = try PrivatePostgresServer()
        defer { server.cleanUp() }
        try await ClosingStores.run { stores in
            var options = PostgresServer.options()
            options.bucketBits = 4
            let store = stores.keep(try await PostgresSecretStore.create(
                configuration: try PostgresServer.configuration(url: server.url, storeName: "covered"), key: try PostgresServer.newKey(),
                options: options))
            for index in 0..<40 {
                try await store.add(NewEntry(name: "entry-\(index)", secret: SecureBytes("secret \(index)"), kind: .password))
            }
            #expect(try Self.primaryKeyShape(url: server.url) == "3|2")
            let plan = try Self.snapshotPlan(url: server.url)
            #expect(plan.contains("Index Only Scan using vault_entries_pkey on vault_entries e"), "\(plan)")
            // The replaced row's sealed bytes come from one lookup of their own, run only for that row.
            #expect(plan.contains("Index Scan using vault_entries_pkey on vault_entries r"), "\(plan)")
        }
    }

    @Test("tables made before the covering key: reads and writes work on the old key, and docs/CLI.md's two statements move it without losing a row",
          .timeLimit(.minutes(5)))
    func oldKeyWorksAndMoves() async throws {
        let server = try PrivatePostgresServer()
        defer { server.cleanUp() }
        try await ClosingStores.run { stores in
            var options = PostgresServer.options()
            options.bucketBits = 4
            let configuration = try PostgresServer.configuration(url: server.url, storeName: "older")
            let key = try PostgresServer.newKey()
            let store = stores.keep(try await PostgresSecretStore.create(configuration: configuration, key: key, options: options))
            // The key as releases before this one made it.
            try PostgresServer.psql("ALTER TABLE vault_entries DROP CONSTRAINT vault_entries_pkey, ADD PRIMARY KEY (vault_id, lookup)",
                                    url: server.url)
            #expect(try Self.primaryKeyShape(url: server.url) == "2|2")
            for index in 0..<20 {
                try await store.add(NewEntry(name: "entry-\(index)", secret: SecureBytes("first \(index)"), kind: .password))
            }
            try await store.put(NewEntry(name: "entry-3", secret: SecureBytes("second 3"), kind: .password))
            try await store.remove(named: "entry-4")
            try await store.put(contentsOf: (20..<30).map { NewEntry(name: "entry-\($0)", secret: SecureBytes("first \($0)"), kind: .password) })
            #expect(try await store.secret(named: "entry-3") == SecureBytes("second 3"))

            // docs/CLI.md, "PostgreSQL": the index built without blocking writers, then swapped in.
            try PostgresServer.psql("""
                CREATE UNIQUE INDEX CONCURRENTLY vault_entries_covering ON vault_entries (vault_id, lookup) INCLUDE (row_generation)
                """, url: server.url)
            try PostgresServer.psql("""
                ALTER TABLE vault_entries DROP CONSTRAINT vault_entries_pkey,
                    ADD CONSTRAINT vault_entries_pkey PRIMARY KEY USING INDEX vault_entries_covering
                """, url: server.url)
            #expect(try Self.primaryKeyShape(url: server.url) == "3|2")

            try await store.put(NewEntry(name: "entry-5", secret: SecureBytes("second 5"), kind: .password))
            let reopened = stores.keep(try await PostgresSecretStore.open(configuration: configuration, key: key, options: options))
            let report = try await reopened.verify()
            #expect(report.failures.isEmpty)
            #expect(report.entriesChecked == 29)
            #expect(try await reopened.secret(named: "entry-5") == SecureBytes("second 5"))
            #expect(try await reopened.secret(named: "entry-3") == SecureBytes("second 3"))
            #expect(try await reopened.secret(named: "entry-29") == SecureBytes("first 29"))
            await #expect(throws: VaultError.self) { _ = try await reopened.secret(named: "entry-4") }
        }
    }
}
