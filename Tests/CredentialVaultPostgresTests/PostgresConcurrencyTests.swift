@testable import CredentialVaultPostgres
import CredentialVault
import Foundation
import Testing
import TestScheduling
import VaultCrypto

/// Many writers on separate connection pools (as separate replicas would be), and a server
/// that goes away and comes back.
@Suite("PostgreSQL store: concurrent writers and a restarting server", .blockingWork, .enabled(if: PostgresServer.shouldRun))
struct PostgresConcurrencyTests {
    @Test("8 clients × 25 writes at once: every write is there, the generation counts each one, verify is clean")
    func noLostUpdate() async throws {
        let configuration = try PostgresServer.configuration()
        let key = try PostgresServer.newKey()
        let creator = try await PostgresSecretStore.create(configuration: configuration, key: key, options: PostgresServer.options())
        await creator.close()
        let clients = 8, writes = 25
        var stores: [PostgresSecretStore] = []
        for _ in 0..<clients {
            stores.append(try await PostgresSecretStore.open(configuration: configuration, key: key, options: PostgresServer.options()))
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (index, store) in stores.enumerated() {
                group.addTask {
                    for write in 0..<writes {
                        // Half distinct names, half one shared name that every client overwrites.
                        if write % 2 == 0 {
                            try await store.add(NewEntry(name: "c\(index)-w\(write)", secret: SecureBytes("v\(index)-\(write)")))
                        } else {
                            try await store.put(NewEntry(name: "shared", secret: SecureBytes("v\(index)-\(write)")))
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        let check = stores[0]
        let report = try await check.verify()
        #expect(report.generation == UInt64(clients * writes))
        let distinct = clients * ((writes + 1) / 2)
        #expect(report.entriesChecked == distinct + 1)
        for index in 0..<clients {
            for write in stride(from: 0, to: writes, by: 2) {
                #expect(try await check.secret(named: "c\(index)-w\(write)") == SecureBytes("v\(index)-\(write)"))
            }
        }
        for store in stores { await store.close() }
    }

    @Test("8 clients creating one store name at once: one creates it, the 7 others are told it exists (not a database error)")
    func concurrentCreates() async throws {
        let configuration = try PostgresServer.configuration()
        let clients = 8
        let codes = await withTaskGroup(of: VaultError.Code?.self) { group in
            for _ in 0..<clients {
                group.addTask {
                    await errorCode {
                        let store = try await PostgresSecretStore.create(configuration: configuration, key: try PostgresServer.newKey(),
                                                                         options: PostgresServer.options())
                        await store.close()
                    }
                }
            }
            var all: [VaultError.Code?] = []
            for await code in group { all.append(code) }
            return all
        }
        #expect(codes.filter { $0 == nil }.count == 1, "\(codes)")
        #expect(codes.filter { $0 == .alreadyExists }.count == clients - 1, "\(codes)")
    }

    @Test("the server stopped: reads and writes fail as unavailable within the timeout, nothing is lost; restarted: work resumes")
    func serverRestart() async throws {
        let server = try PrivatePostgresServer()
        defer { server.cleanUp() }
        let configuration = try PostgresServer.configuration(url: server.url)
        let key = try PostgresServer.newKey()
        let creator = try await PostgresSecretStore.create(configuration: configuration, key: key, options: PostgresServer.options())
        for index in 0..<20 { try await creator.add(NewEntry(name: "e\(index)", secret: SecureBytes("v\(index)"))) }
        await creator.close()
        // The handle under test gives up after 4 s; opened while the server is up.
        let store = try await PostgresSecretStore.open(configuration: configuration, key: key,
                                                       options: PostgresServer.options(timeout: .seconds(4)))
        try server.stop()
        let started = ContinuousClock.now
        #expect(await errorCode { _ = try await store.secret(named: "e1") } == .serverUnavailable)
        #expect(await errorCode { try await store.add(NewEntry(name: "during", secret: SecureBytes("x"))) } == .serverUnavailable)
        // Two 4 s deadlines, with room for a loaded machine; never a hang.
        #expect(ContinuousClock.now - started < .seconds(60))
        try server.restart()
        // The pool reconnects by itself; bounded: at most 60 tries, half a second apart.
        var recovered = false
        for _ in 0..<60 {
            if (try? await store.secret(named: "e1")) != nil { recovered = true; break }
            try await Task.sleep(for: .milliseconds(500))
        }
        #expect(recovered)
        try await store.add(NewEntry(name: "after", secret: SecureBytes("y")))
        let report = try await store.verify()
        #expect(report.entriesChecked == 21)
        #expect(await errorCode { _ = try await store.secret(named: "during") } == .notFound)
        await store.close()
    }
}

/// The configuration: URL parsing, where the password comes from, TLS outside loopback.
@Suite("PostgreSQL store: configuration", .blockingWork)
struct PostgresConfigurationTests {
    @Test("a URL with a password is refused; loopback may be plain, anything else needs TLS")
    func urls() throws {
        #expect(throws: VaultError.self) { try PostgresStoreConfiguration(url: "postgres://u:secret@db.example/vault", environment: [:]) }
        #expect(throws: VaultError.self) { try PostgresStoreConfiguration(url: "mysql://u@db/vault", environment: [:]) }
        #expect(throws: VaultError.self) { try PostgresStoreConfiguration(url: "postgres://u@db.example", environment: [:]) }
        #expect(throws: VaultError.self) { try PostgresStoreConfiguration(url: "postgres://u@db.example:99999/v", environment: [:]) }
        let remote = try PostgresStoreConfiguration(url: "postgres://app@db.example:6543/secrets", environment: [:])
        #expect(remote.host == "db.example" && remote.port == 6543 && remote.username == "app" && remote.database == "secrets")
        #expect(remote.transport == .tlsRequired)
        #expect(remote.password == nil)
        let local = try PostgresStoreConfiguration(url: "postgresql://app@127.0.0.1/secrets", environment: [:])
        #expect(local.transport == .plainLoopback && local.port == 5432)
        let v6 = try PostgresStoreConfiguration(url: "postgres://app@[::1]:7000/secrets", environment: [:])
        #expect(v6.host == "::1" && v6.port == 7000 && v6.transport == .plainLoopback)
    }

    @Test("the password comes from PGPASSWORD, else the matching PGPASSFILE line")
    func passwords() throws {
        let file = NSTemporaryDirectory() + "pgpass-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: file) }
        try "# comment\nother:5432:*:app:wrong\ndb.example:6543:secrets:app:pa\\:ss\n*:*:*:*:fallback\n"
            .write(toFile: file, atomically: true, encoding: .utf8)
        let fromFile = try PostgresStoreConfiguration(url: "postgres://app@db.example:6543/secrets", environment: ["PGPASSFILE": file])
        #expect(fromFile.password == SecureBytes("pa:ss"))
        let fallback = try PostgresStoreConfiguration(url: "postgres://x@h/d", environment: ["PGPASSFILE": file])
        #expect(fallback.password == SecureBytes("fallback"))
        let fromEnvironment = try PostgresStoreConfiguration(url: "postgres://app@db.example:6543/secrets",
                                                             environment: ["PGPASSFILE": file, "PGPASSWORD": "env"])
        #expect(fromEnvironment.password == SecureBytes("env"))
    }
}
