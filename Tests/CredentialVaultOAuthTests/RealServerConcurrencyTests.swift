import CredentialVault
import CredentialVaultOAuth
import Foundation
import OAuthServerSupport
import Testing
import TestScheduling
import VaultCrypto

/// N processes × M tasks refreshing one session at the same instant: the real server's own
/// records must show exactly one refresh grant.
@Suite("OAuth against the real server: single-flight refresh across processes", .blockingWork, .enabled(if: OAuthServer.shouldRun))
struct RealServerConcurrencyTests {
    @Test("8 processes × 4 tasks at the same instant → exactly one refresh grant at the server")
    func oneRefreshGrant() async throws {
        let server = try OAuthServer.require()
        let folder = try SessionFolder()
        defer { folder.cleanUp() }
        let session = try folder.session()
        _ = await session.restore()
        let initial = try server.passwordGrant()
        let firstRefresh = try #require(initial.refreshToken)
        try await session.signIn(user: User(id: try server.userID, onboardingComplete: true), credentials: initial.expiredLocally)

        let processes = 8, tasks = 4
        // Started a moment ahead so that every process is up before the instant comes.
        let startAt = (Date().timeIntervalSince1970 + 3) * 1000
        // The worker authenticates as the confidential client with the secret from its file.
        let results = try ConcurrentWorkers.run("VaultOAuthTestWorker", processes: processes, arguments: [
            "refresh", folder.path + "/vault", folder.keyPath, try server.tokenEndpoint.absoluteString,
            try server.string("confidential_client_id"), "\(tasks)", "\(Int(startAt))"], server: server)
        for result in results { #expect(result.status == 0, "\(result.output.suffix(2000))") }
        let lines = results.map(\.output)
        // Every task of every process got the same one fresh access token.
        #expect(lines.allSatisfy { $0 == "ok \(tasks) 1" }, "\(lines)")
        let record = try server.records(of: firstRefresh)
        #expect(record.refreshGrants == 1)
        #expect(record.liveInFamily == 1)
        let saved = await (try folder.session()).restore()
        #expect(saved.name == "signedIn")
    }
}
