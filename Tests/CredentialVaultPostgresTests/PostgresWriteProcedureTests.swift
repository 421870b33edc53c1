@testable import CredentialVaultPostgres
import CredentialVault
import Foundation
import Testing
import TestScheduling
import VaultCrypto

/// Issue 38: a write of one entry to a version 3 store calls `vault_bucket_write_v3`, which
/// `ensureSchema` creates best effort. Where the procedure is missing (dropped, never creatable)
/// or refused, the write is sent again as three statements and nothing is lost. Each test has a
/// server of its own: dropping the procedure or revoking a language must not reach other suites.
@Suite("PostgreSQL store: the write procedure vault_bucket_write_v3 missing or refused", .blockingWork, .serialized,
       .enabled(if: PostgresServer.shouldRun, "no PostgreSQL server (VAULT_POSTGRES_URL)"))
struct PostgresWriteProcedureTests {
    /// The procedure's signature, as `PostgresSchema.tablesPresent` looks it up.
    static let procedure = "vault_bucket_write_v3(bytea,bytea,bigint,bytea,integer,bytea,bytea,bigint)"

    /// 16 buckets: a store of its own is created quickly.
    static func options() -> PostgresSecretStore.Options {
        var options = PostgresServer.options()
        options.bucketBits = 4
        return options
    }

    /// Whether the database at `url` has the write procedure.
    static func procedureExists(url: String) throws -> Bool {
        try PostgresServer.psql("SELECT to_regprocedure('\(procedure)') IS NOT NULL", url: url) == "t"
    }

    /// `server`'s URL with another user and database (loopback trusts every role, no password).
    static func url(of server: PrivatePostgresServer, user: String? = nil, database: String) throws -> String {
        let owner = server.url.dropFirst("postgres://".count).prefix { $0 != "@" }
        return "postgres://\(user ?? String(owner))@127.0.0.1:\(try server.port)/\(database)"
    }

    /// The names of the statements prepared on `store`'s connection (one connection: the one it writes on).
    static func prepared(_ store: PostgresSecretStore) async throws -> Set<String> {
        var names: Set<String> = []
        for row in try await store.client.rows("SELECT name FROM pg_prepared_statements") {
            names.insert(try row.decode(String.self))
        }
        return names
    }

    /// A configuration of one connection: `prepared(_:)` then sees the statements the store's writes prepared.
    static func configuration(url: String, storeName: String) throws -> PostgresStoreConfiguration {
        var configuration = try PostgresServer.configuration(url: url, storeName: storeName)
        configuration.maximumConnections = 1
        return configuration
    }

    @Test("a database without the write procedure (dropped, or never creatable): writes fall back to the three statements, nothing lost, and a store created later makes it again",
          .timeLimit(.minutes(10)))
    func writesFallBackWithoutTheProcedure() async throws {
        let server = try PrivatePostgresServer()
        defer { server.cleanUp() }
        try await ClosingStores.run { stores in
            let key = try PostgresServer.newKey()
            let configuration = try Self.configuration(url: server.url, storeName: "dropped")
            let store = stores.keep(try await PostgresSecretStore.create(configuration: configuration, key: key, options: Self.options()))
            for name in ["kept", "doomed", "spare"] {
                try await store.add(NewEntry(name: name, secret: SecureBytes("first " + name), kind: .password))
            }
            #expect(try Self.procedureExists(url: server.url), "create made the procedure")
            #expect(store.writesByProcedureNow)
            var names = try await Self.prepared(store)
            #expect(names.contains(PostgresBucketWriteCall.name), "the adds called the procedure: \(names)")
            #expect(names.isDisjoint(with: [PostgresBucketEntryPut.name, PostgresBucketEntryRemove.name]), "\(names)")

            try PostgresServer.psql("DROP PROCEDURE \(Self.procedure)", url: server.url)
            #expect(try !Self.procedureExists(url: server.url))
            // Its connection prepared the CALL before the drop: that statement now fails (42883), unwritten.
            try await store.put(NewEntry(name: "kept", secret: SecureBytes("second kept"), kind: .password))
            #expect(!store.writesByProcedureNow)
            names = try await Self.prepared(store)
            #expect(names.contains(PostgresBucketEntryPut.name), "the put fell back to the three statements: \(names)")
            try await store.add(NewEntry(name: "added", secret: SecureBytes("first added"), kind: .password))
            try await store.remove(named: "doomed")
            names = try await Self.prepared(store)
            #expect(names.contains(PostgresBucketEntryRemove.name), "the removal took the three statements: \(names)")
            #expect(try await store.secret(named: "kept") == SecureBytes("second kept"))
            #expect(try await store.secret(named: "added") == SecureBytes("first added"))
            #expect(await errorCode { _ = try await store.secret(named: "doomed") } == .notFound)

            // A store opened later, the procedure still missing, writes by the three statements too
            // (it finds the procedure missing when opened, or when its first call is refused).
            let later = stores.keep(try await PostgresSecretStore.open(configuration: configuration, key: key, options: Self.options()))
            try await later.remove(named: "spare")
            #expect(!later.writesByProcedureNow)
            names = try await Self.prepared(later)
            #expect(names.contains(PostgresBucketEntryRemove.name), "the removal fell back to the three statements: \(names)")
            try await later.put(NewEntry(name: "added", secret: SecureBytes("second added"), kind: .password))
            names = try await Self.prepared(later)
            #expect(names.contains(PostgresBucketEntryPut.name), "the put took the three statements: \(names)")
            #expect(await errorCode { _ = try await later.secret(named: "spare") } == .notFound)
            #expect(try await later.secret(named: "added") == SecureBytes("second added"))
            #expect(try await later.secret(named: "kept") == SecureBytes("second kept"))
            #expect(try await later.list().map(\.name) == ["added", "kept"])
            let report = try await later.verify()
            #expect(report.isIntact)
            #expect(report.entriesChecked == 2)
            // Eight writes, each saving its bucket once: a refused call wrote nothing, its resend wrote once.
            #expect(report.generation == 8)
            #expect(try await store.verify().isIntact)
            await stores.close(later)
            await stores.close(store)

            // Creating another store puts the procedure back, and that store's writes use it.
            let recreated = stores.keep(try await PostgresSecretStore.create(
                configuration: try Self.configuration(url: server.url, storeName: "recreated"), key: key, options: Self.options()))
            #expect(try Self.procedureExists(url: server.url), "create made the procedure again")
            try await recreated.put(NewEntry(name: "token", secret: SecureBytes("by procedure"), kind: .password))
            #expect(recreated.writesByProcedureNow)
            names = try await Self.prepared(recreated)
            #expect(names.contains(PostgresBucketWriteCall.name), "the put called the procedure: \(names)")
            #expect(!names.contains(PostgresBucketEntryPut.name), "\(names)")
            #expect(try await recreated.secret(named: "token") == SecureBytes("by procedure"))
            #expect(try await recreated.verify().isIntact)
        }
    }

    @Test("a role without the right to create procedures still creates and uses its store; a procedure another role planted is never called; one refused EXECUTE writes without it",
          .timeLimit(.minutes(10)))
    func aRoleWithoutTheProcedureStillWrites() async throws {
        let server = try PrivatePostgresServer()
        defer { server.cleanUp() }
        // A database the role owns (it may create tables in its public schema) where PL/pgSQL is not
        // granted to PUBLIC: CREATE PROCEDURE … LANGUAGE plpgsql is refused (42501), CREATE TABLE is not.
        try PostgresServer.psql("CREATE ROLE vault_limited LOGIN", url: server.url)
        try PostgresServer.psql("CREATE DATABASE limited OWNER vault_limited", url: server.url)
        let superuser = try Self.url(of: server, database: "limited")
        try PostgresServer.psql("REVOKE USAGE ON LANGUAGE plpgsql FROM PUBLIC", url: superuser)
        #expect(try PostgresServer.psql("SELECT has_language_privilege('vault_limited', 'plpgsql', 'USAGE')", url: superuser) == "f")
        let limited = try Self.url(of: server, user: "vault_limited", database: "limited")
        let key = try PostgresServer.newKey()
        let configuration = try Self.configuration(url: limited, storeName: "limited")

        try await ClosingStores.run { stores in
            let store = stores.keep(try await PostgresSecretStore.create(configuration: configuration, key: key, options: Self.options()))
            #expect(try !Self.procedureExists(url: superuser), "the role could not create the procedure")
            #expect(try PostgresServer.psql("SELECT tableowner FROM pg_tables WHERE tablename = 'vault_buckets'", url: superuser) == "vault_limited")
            try await store.add(NewEntry(name: "token", secret: SecureBytes("first"), kind: .password))
            #expect(!store.writesByProcedureNow)
            var names = try await Self.prepared(store)
            #expect(names.contains(PostgresBucketEntryPut.name), "the add fell back to the three statements: \(names)")
            try await store.put(NewEntry(name: "token", secret: SecureBytes("second"), kind: .password))
            try await store.add(NewEntry(name: "doomed", secret: SecureBytes("doomed"), kind: .password))
            try await store.remove(named: "doomed")
            names = try await Self.prepared(store)
            #expect(names.contains(PostgresBucketEntryRemove.name), "the removal took the three statements: \(names)")
            #expect(try await store.secret(named: "token") == SecureBytes("second"))
            #expect(await errorCode { _ = try await store.secret(named: "doomed") } == .notFound)
            await stores.close(store)

            // Another role (here the superuser, as a co-tenant able to create in public would) plants a
            // vault_bucket_write_v3 that records every call: not the tables' owner, it is never called.
            try PostgresServer.psql("""
                CREATE TABLE planted_calls (n integer); GRANT INSERT ON planted_calls TO PUBLIC;
                CREATE PROCEDURE \(Self.procedure.replacingOccurrences(of: ",bigint)", with: ",INOUT saved bigint DEFAULT NULL)"))
                LANGUAGE plpgsql AS $$ BEGIN INSERT INTO planted_calls VALUES (1); saved := 0; END $$
                """, url: superuser)
            let cotenant = stores.keep(try await PostgresSecretStore.open(configuration: configuration, key: key, options: Self.options()))
            #expect(!cotenant.writesByProcedureNow, "a procedure of another owner is not used")
            try await cotenant.put(NewEntry(name: "token", secret: SecureBytes("planted?"), kind: .password))
            #expect(try PostgresServer.psql("SELECT count(*) FROM planted_calls", url: superuser) == "0", "the planted procedure never ran")
            #expect(try await cotenant.secret(named: "token") == SecureBytes("planted?"))
            await stores.close(cotenant)
            try PostgresServer.psql("DROP PROCEDURE \(Self.procedure); DROP TABLE planted_calls", url: superuser)

            // The procedure made by the superuser and given to the role (a store uses only one with the
            // tables' owner), its EXECUTE revoked from PUBLIC and from the role: the role's CALL is refused (42501).
            try PostgresServer.psql(PostgresSchema.createWriteProcedure.sql, url: superuser)
            try PostgresServer.psql("ALTER PROCEDURE \(Self.procedure) OWNER TO vault_limited", url: superuser)
            try PostgresServer.psql("REVOKE EXECUTE ON PROCEDURE \(Self.procedure) FROM PUBLIC, vault_limited", url: superuser)
            #expect(try Self.procedureExists(url: superuser))
            #expect(try PostgresServer.psql("SELECT has_function_privilege('vault_limited', '\(Self.procedure)', 'EXECUTE')",
                                            url: superuser) == "f")
            let refused = stores.keep(try await PostgresSecretStore.open(configuration: configuration, key: key, options: Self.options()))
            #expect(refused.writesByProcedureNow, "opened where the procedure exists, the store tries it")
            try await refused.put(NewEntry(name: "token", secret: SecureBytes("third"), kind: .password))
            #expect(!refused.writesByProcedureNow)
            names = try await Self.prepared(refused)
            #expect(names.contains(PostgresBucketEntryPut.name), "the refused call fell back to the three statements: \(names)")
            try await refused.add(NewEntry(name: "other", secret: SecureBytes("other"), kind: .password))
            #expect(try await refused.secret(named: "token") == SecureBytes("third"))
            #expect(try await refused.secret(named: "other") == SecureBytes("other"))
            await stores.close(refused)

            // Granted, the same role's writes go through the procedure: the refusal above was the reason.
            try PostgresServer.psql("GRANT EXECUTE ON PROCEDURE \(Self.procedure) TO vault_limited", url: superuser)
            let granted = stores.keep(try await PostgresSecretStore.open(configuration: configuration, key: key, options: Self.options()))
            try await granted.put(NewEntry(name: "token", secret: SecureBytes("fourth"), kind: .password))
            #expect(granted.writesByProcedureNow)
            names = try await Self.prepared(granted)
            #expect(names.contains(PostgresBucketWriteCall.name), "the put called the procedure: \(names)")
            #expect(!names.contains(PostgresBucketEntryPut.name), "\(names)")
            #expect(try await granted.secret(named: "token") == SecureBytes("fourth"))
            #expect(try await granted.secret(named: "other") == SecureBytes("other"))
            #expect(try await granted.list().map(\.name) == ["other", "token"])
            let report = try await granted.verify()
            #expect(report.isIntact)
            #expect(report.entriesChecked == 2)
            // Eight writes, each saving its bucket once.
            #expect(report.generation == 8)
        }
    }
}

extension PostgresSecretStore {
    /// `writesByProcedure` read once (`#expect` cannot take the non-copyable `Atomic` itself).
    fileprivate var writesByProcedureNow: Bool { writesByProcedure.load(ordering: .relaxed) }
}
