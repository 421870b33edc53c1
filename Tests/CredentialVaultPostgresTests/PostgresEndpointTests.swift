@testable import CredentialVaultPostgres
import CredentialVault
import Foundation
import Testing
import TestScheduling

/// libpq's list of several hosts in the URL (`postgres://user@h1:p1,h2:p2/db`): parsing, and TLS
/// decided for each host. No server needed.
@Suite struct PostgresEndpointParsingTests {
    @Test func severalHostsKeepTheirOrderAndTheFirstIsHostAndPort() throws {
        let configuration = try PostgresStoreConfiguration(url: "postgres://app@db1.example:5433,db2.example/secrets", environment: [:])
        #expect(configuration.endpoints == [PostgresStoreConfiguration.Endpoint(host: "db1.example", port: 5433),
                                            PostgresStoreConfiguration.Endpoint(host: "db2.example", port: 5432)])
        #expect(configuration.host == "db1.example" && configuration.port == 5433 && configuration.transport == .tlsRequired)
        #expect(configuration.username == "app" && configuration.database == "secrets")
    }

    @Test func transportIsDecidedForEachHost() throws {
        let configuration = try PostgresStoreConfiguration(url: "postgres://app@[::1]:7000,db.example:6543,localhost/secrets", environment: [:])
        #expect(configuration.endpoints.map(\.host) == ["::1", "db.example", "localhost"])
        #expect(configuration.endpoints.map(\.port) == [7000, 6543, 5432])
        #expect(configuration.endpoints.map(\.transport) == [.plainLoopback, .tlsRequired, .plainLoopback])
        #expect(configuration.endpoints.map(\.connectionHost) == ["::1", "db.example", "127.0.0.1"])
        #expect(configuration.transport == .plainLoopback)
    }

    @Test func oneHostIsOneEndpoint() throws {
        let configuration = try PostgresStoreConfiguration(url: "postgres://app@127.0.0.1:6000/secrets", environment: [:])
        #expect(configuration.endpoints == [PostgresStoreConfiguration.Endpoint(host: "127.0.0.1", port: 6000)])
    }

    @Test(arguments: [
        ("postgres://app@h1,,h2/db", "names no host"),
        ("postgres://app@,h1/db", "names no host"),
        ("postgres://app@h1,/db", "names no host"),
        ("postgres://app@h1:5432,:5433/db", "names no host"),
        ("postgres://app@h1:0,h2/db", "invalid port"),
        ("postgres://app@h1,h2:70000/db", "invalid port"),
        ("postgres://app@h1,h2:abc/db", "invalid port"),
        ("postgres://app@h1,[::1/db", "malformed host"),
        ("postgres://app@[::1]x,h2/db", "malformed host"),
        ("postgres://app@::1:5432,h2/db", "malformed host"),
    ])
    func aBadHostListIsRefusedSayingWhy(url: String, reason: String) {
        #expect {
            try PostgresStoreConfiguration(url: url, environment: [:])
        } throws: { error in
            guard let error = error as? VaultError else { return false }
            return error.code == .invalidInput && error.message.contains(reason)
        }
    }

    @Test func aPasswordIsRefusedWithSeveralHostsToo() {
        #expect {
            try PostgresStoreConfiguration(url: "postgres://app:secret@h1,h2/db", environment: [:])
        } throws: { error in
            guard let error = error as? VaultError else { return false }
            return error.code == .invalidInput && error.message.contains("password") && !error.message.contains("secret")
        }
    }

    @Test func anUnavailableServerAmongSeveralNamesThemAll() throws {
        let several = try PostgresStoreConfiguration(url: "postgres://app@db1.example,[::1]:5433/db", environment: [:])
        #expect(PostgresErrors.unavailable(several, "why").message
            == "the PostgreSQL primary (of db1.example:5432, [::1]:5433) is unavailable (why)")
        let one = try PostgresStoreConfiguration(url: "postgres://app@db1.example/db", environment: [:])
        #expect(PostgresErrors.unavailable(one, "why").message == "the PostgreSQL server at db1.example:5432 is unavailable (why)")
    }

    @Test func theFirstHostsPassFileLineIsUsed() throws {
        let file = NSTemporaryDirectory() + "pgpass-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: file) }
        try "db2.example:5432:db:app:second\ndb1.example:5432:db:app:first\n".write(toFile: file, atomically: true, encoding: .utf8)
        let configuration = try PostgresStoreConfiguration(url: "postgres://app@db1.example,db2.example/db", environment: ["PGPASSFILE": file])
        #expect(configuration.password == SecureBytes("first"))
    }
}

/// Finding the primary among several hosts on the shared server: a host that refuses connections
/// is passed over; with no primary at all the store is unavailable, saying so.
@Suite("PostgreSQL store: the primary among several hosts", .blockingWork,
       .enabled(if: PostgresServer.shouldRun, "no PostgreSQL server (VAULT_POSTGRES_URL)"))
struct PostgresPrimarySelectionTests {
    /// A URL naming port 1 on 127.0.0.1 (nothing listens there: refused) before the shared server.
    static func urlWithADeadHostFirst() throws -> String {
        let url = try PostgresServer.requireURL()
        let user = url.dropFirst("postgres://".count).prefix { $0 != "@" }
        let hosts = url.drop { $0 != "@" }.dropFirst().prefix { $0 != "/" }
        return "postgres://\(user)@127.0.0.1:1,\(hosts)/vault"
    }

    @Test(.timeLimit(.minutes(10)))
    func aHostThatRefusesIsPassedOver() async throws {
        let configuration = try PostgresServer.configuration(url: try Self.urlWithADeadHostFirst())
        let key = try PostgresServer.newKey()
        let store = try await PostgresSecretStore.create(configuration: configuration, key: key, options: PostgresServer.options())
        #expect(store.client.selection.currentEndpointIndex == 1)
        try await store.put(NewEntry(name: "token", secret: SecureBytes("value"), kind: .password))
        await store.close()
        let reopened = try await PostgresSecretStore.open(configuration: configuration, key: key, options: PostgresServer.options())
        #expect(try await reopened.secret(named: "token") == SecureBytes("value"))
        await reopened.close()
    }

    @Test(.timeLimit(.minutes(10)))
    func noPrimaryAmongTheHostsIsUnavailable() async throws {
        var configuration = try PostgresServer.configuration(url: "postgres://vault@127.0.0.1:1,[::1]:1/vault")
        configuration.connectTimeout = .seconds(2)
        do {
            let store = try await PostgresSecretStore.create(configuration: configuration, key: try PostgresServer.newKey(),
                                                             options: PostgresServer.options(timeout: .seconds(20)))
            await store.close()
            Issue.record("a store was created with no server")
        } catch let error as VaultError {
            #expect(error.code == .serverUnavailable)
            #expect(error.message.contains("no PostgreSQL primary among 2 hosts (127.0.0.1:1, [::1]:1)"), "\(error.message)")
        }
    }

    @Test(.timeLimit(.minutes(10)))
    func aClosedStoreRefusesAndKeepsNoPool() async throws {
        let configuration = try PostgresServer.configuration()
        let store = try await PostgresSecretStore.create(configuration: configuration, key: try PostgresServer.newKey(),
                                                         options: PostgresServer.options())
        await store.close()
        #expect(store.client.selection.currentEndpointIndex == nil)
        #expect(await errorCode { _ = try await store.secret(named: "anything") } == .serverUnavailable)
    }
}
