import CredentialVault
import CredentialVaultOAuth
import Foundation
import OAuthServerSupport
import Testing
import VaultCrypto

/// Issue 36 point 15: a launch (`credentials(minTTL:client:)`) that starts while another process's
/// refresh is in flight, its journal already on disk, waits for that refresh with the client's
/// refresh budget, not with the session's `lockTimeout`. No server: the waiter never refreshes.
@Suite("A launch during another process's refresh")
struct LaunchDuringRefreshTests {
    @Test("the journal is written before the second launch starts; the launch outlasts lockTimeout and gets the saved tokens")
    func launchWaitsWithTheRefreshBudget() async throws {
        let folder = try SessionFolder()
        defer { folder.cleanUp() }
        let lockTimeout = Duration.milliseconds(300)
        let configuration = SessionConfiguration(lockTimeout: lockTimeout)
        let key = try VaultKey.fromKeyFile(path: folder.keyPath)
        let refresher = SessionManager(directory: folder.path + "/vault", key: key, configuration: configuration)
        let launcher = SessionManager(directory: folder.path + "/vault", key: key, configuration: configuration)
        let old = Credentials(accessToken: SecureBytes(copying: Array("access-1".utf8)), refreshToken: SecureBytes(copying: Array("refresh-1".utf8)),
                              expiresAt: Date().addingTimeInterval(-60))
        _ = await refresher.restore()
        try await refresher.signIn(user: User(id: "u1", onboardingComplete: true), credentials: old)
        let fresh = Credentials(accessToken: SecureBytes(copying: Array("access-2".utf8)), refreshToken: SecureBytes(copying: Array("refresh-2".utf8)),
                                expiresAt: Date().addingTimeInterval(3600))
        // A token endpoint that takes five lock timeouts to answer.
        let refreshing = Task {
            try await refresher.validCredentials { _ in
                try await Task.sleep(for: lockTimeout * 5)
                return fresh
            }
        }
        defer { refreshing.cancel() }
        // The second process starts once the first one's journal is on disk (polled, bounded).
        let profiles = ProfileStore(directory: folder.path + "/vault")
        var journalWritten = false
        for _ in 0..<200 where !journalWritten {
            journalWritten = (try? profiles.load()?.refreshInFlight) != nil
            if !journalWritten { try await Task.sleep(for: .milliseconds(10)) }
        }
        try #require(journalWritten)
        let client = try OAuthClient(configuration: OAuthConfiguration(
            issuer: nil, endpoints: OAuthEndpoints(token: URL(string: "http://127.0.0.1:9/token")), clientID: "c"))
        let launched: Result<Credentials, any Error>
        do {
            launched = .success(try await launcher.credentials(client: client))
        } catch {
            launched = .failure(error)
        }
        try? await client.shutdown()
        _ = try await refreshing.value
        let access = try launched.get().accessToken.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
        #expect(access == "access-2", "the launch found the tokens the refresh saved")
        #expect(client.configuration.refreshBudget > lockTimeout * 5)
    }
}
