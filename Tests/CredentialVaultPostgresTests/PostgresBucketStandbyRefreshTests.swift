@testable import CredentialVaultPostgres
import CredentialVault
import Foundation
import Testing
import TestScheduling
import VaultCrypto

/// `validCredentials(session:)` goes through the store's own guarding, as every other operation:
/// a token read answered by a standby (the old primary after a switchover) is `.serverUnavailable`
/// with the primary sought again, so the next call reaches the new primary by itself.
@Suite("PostgreSQL store: a token refresh read answered by a standby", .blockingWork, .serialized,
       .enabled(if: PostgresServer.shouldRun, "no PostgreSQL server (VAULT_POSTGRES_URL)"))
struct PostgresBucketStandbyRefreshTests {
    @Test("after a switchover, validCredentials on the old primary's pool fails at most once (unavailable, no 'PostgresStandbyAnswer'), then reads the new primary",
          .timeLimit(.minutes(10)))
    func validCredentialsSeeksThePrimaryAgain() async throws {
        let primary = try PrivatePostgresServer()
        defer { primary.cleanUp() }
        let standby = try PrivatePostgresStandby(of: primary)
        defer { standby.cleanUp() }
        let key = try PostgresServer.newKey()
        func configuration(_ url: String) throws -> PostgresStoreConfiguration {
            var configuration = try PostgresServer.configuration(url: url, storeName: "refresh-switchover")
            configuration.connectTimeout = .seconds(2)
            return configuration
        }
        let options = PostgresServer.options(timeout: .seconds(5))
        let store = try await PostgresSecretStore.create(configuration: try configuration(primary.url(ports: [try primary.port, standby.port])),
                                                         key: key, options: options)
        let session = "session"
        try await store.saveCredentials(Credentials(accessToken: SecureBytes("old"), refreshToken: SecureBytes("r-old"),
                                                    expiresAt: Date(timeIntervalSinceNow: 3600)), session: session)
        // Switchover: the old primary follows the promoted standby, its replay paused (it lags).
        try primary.stop(mode: "fast")
        try standby.promote()
        try primary.follow(standby)
        try PostgresServer.psql("SELECT pg_wal_replay_pause()", url: primary.url)
        for _ in 0..<200 where (try? PostgresServer.psql("SELECT pg_get_wal_replay_pause_state()", url: primary.url)) != "paused" {
            try await Task.sleep(for: .milliseconds(100))
        }
        let writer = try await PostgresSecretStore.open(configuration: try configuration(standby.url), key: key, options: options)
        try await writer.saveCredentials(Credentials(accessToken: SecureBytes("new"), refreshToken: SecureBytes("r-new"),
                                                     expiresAt: Date(timeIntervalSinceNow: 3600)), session: session)
        await writer.close()

        var failures: [String] = []
        var read: Credentials?
        for _ in 0..<2 where read == nil {
            do {
                read = try await store.validCredentials(session: session) { _ in throw TestFailure("no refresh expected") }
            } catch let error as VaultError {
                #expect(error.code == .serverUnavailable)
                failures.append(error.description)
            }
        }
        #expect(read?.accessToken == SecureBytes("new"), "\(failures)")
        #expect(failures.allSatisfy { !$0.contains("PostgresStandbyAnswer") }, "\(failures)")
        #expect(store.client.selection.currentEndpointIndex == 1)
        await store.close()
    }
}
