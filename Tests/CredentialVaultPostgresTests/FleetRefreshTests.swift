import CredentialVault
import CredentialVaultOAuth
import CredentialVaultPostgres
import Foundation
import OAuthServerSupport
import Testing
import TestScheduling
import VaultCrypto

/// 8 processes standing for 8 replicas, each with its own connection pool to one PostgreSQL
/// store, needing a fresh token at the same instant: the real authorization server's records
/// must show exactly one refresh grant (the advisory lock of `validCredentials(session:)`).
@Suite("Fleet refresh: PostgreSQL store + the real authorization server", .blockingWork,
       .enabled(if: OAuthServer.shouldRun && (ProcessInfo.processInfo.environment["VAULT_POSTGRES_URL"] != nil
                                              || ProcessInfo.processInfo.environment["CI"] == "true")))
struct FleetRefreshTests {
    @Test("8 replicas × 4 tasks at the same instant → exactly one refresh grant at the server, one live token")
    func oneRefreshAcrossTheFleet() async throws {
        let server = try OAuthServer.require()
        guard let url = ProcessInfo.processInfo.environment["VAULT_POSTGRES_URL"] else {
            throw ServerFailure("no PostgreSQL server: VAULT_POSTGRES_URL is not set (run the tests through scripts/test)")
        }
        let folder = try SessionFolder()
        defer { folder.cleanUp() }
        let storeName = "fleet-" + UUID().uuidString
        let session = try server.userID
        let store = try await PostgresSecretStore.create(
            configuration: try PostgresStoreConfiguration(url: url, storeName: storeName), key: try VaultKey.fromKeyFile(path: folder.keyPath),
            options: PostgresSecretStore.Options(operationTimeout: .seconds(90)))
        let initial = try server.passwordGrant()
        let firstRefresh = try #require(initial.refreshToken)
        try await store.saveCredentials(initial.expiredLocally, session: session)

        let processes = 8, tasks = 4
        let startAt = (Date().timeIntervalSince1970 + 3) * 1000
        let results = try ConcurrentWorkers.run("VaultPostgresTestWorker", processes: processes, arguments: [
            "refresh", url, storeName, folder.keyPath, session, try server.tokenEndpoint.absoluteString,
            try server.string("confidential_client_id"), "\(tasks)", "\(Int(startAt))"], server: server)
        for result in results { #expect(result.status == 0, "\(result.output.suffix(2000))") }
        let lines = results.map(\.output)
        #expect(lines.allSatisfy { $0 == "ok \(tasks) 1" }, "\(lines)")
        let record = try server.records(of: firstRefresh)
        #expect(record.refreshGrants == 1)
        #expect(record.liveInFamily == 1)
        // The saved pair is the one the server knows as live, and it is valid now.
        let saved = try await store.validCredentials(session: session) { _ in throw ServerFailure("no second refresh expected") }
        #expect(try server.records(of: saved.accessToken).revoked == false)
        await store.close()
    }
}
