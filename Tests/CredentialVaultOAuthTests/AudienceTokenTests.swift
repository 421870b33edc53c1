import CredentialVault
import CredentialVaultOAuth
import Foundation
import OAuthServerSupport
import Testing
import TestScheduling
import VaultCrypto

/// Per-audience tokens from one sign-in (RFC 8707 `resource` on a refresh-token grant):
/// against the stand-in's /audience/token (it logs the resource asked for and rotates the
/// refresh token on every answer, killing the old one) and against the real server's rotation.
@Suite("Per-audience tokens", .blockingWork, .enabled(if: OAuthServer.shouldRun), .serialized)
struct AudienceTokenTests {
    func signedIn(_ folder: SessionFolder, refresh: String) async throws -> SessionManager {
        let session = try folder.session()
        _ = await session.restore()
        try await session.signIn(user: User(id: "u1", onboardingComplete: true),
                                 credentials: Credentials(accessToken: secret("main-access"), refreshToken: secret(refresh),
                                                          expiresAt: Date().addingTimeInterval(3600)))
        return session
    }

    @Test("one request per audience for many callers; cached until it expires; the rotated refresh token is saved with it; the session's own token stays")
    func singleFlightCacheAndRotation() async throws {
        let server = try OAuthServer.require()
        let client = try OAuthClient(configuration: OAuthConfiguration(
            issuer: nil, endpoints: OAuthEndpoints(token: try server.standIn.appendingPathComponent("audience/token")), clientID: "vault-app"))
        let folder = try SessionFolder()
        defer { folder.cleanUp() }
        let session = try await signedIn(folder, refresh: "seed-\(UUID().uuidString)")
        let audience = "https://api.example.com/\(UUID().uuidString)"
        let tokens = try await withThrowingTaskGroup(of: SecureBytes.self) { group in
            for _ in 0..<8 {
                group.addTask { try await session.validCredentials(forAudience: audience, refresher: client.audienceRefresher).accessToken }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(Set(tokens.map { $0.withUnsafeBytes { Array($0) } }).count == 1)
        #expect(try server.audienceLog().filter { $0.resource == audience }.count == 1)
        // Cached: no request; the session's own access token is untouched.
        _ = try await session.validCredentials(forAudience: audience, refresher: client.audienceRefresher)
        #expect(try server.audienceLog().filter { $0.resource == audience }.count == 1)
        #expect(await session.restore().credentials?.accessToken == secret("main-access"))
        // The rotation landed: a second audience uses the new refresh token (the old one is dead there).
        let other = try await session.validCredentials(forAudience: audience + "/other", refresher: client.audienceRefresher)
        #expect(other.accessToken != tokens[0])
        #expect(try server.audienceLog().last?.ok == true)
        // Sign-out removes the audience tokens with the session's.
        _ = try await session.signOut()
        let left = try folder.store().list(owner: "user:u1").map(\.name)
        #expect(!left.contains { $0.hasPrefix("session.audience.") }, "\(left)")
    }

    @Test("with the real server's rotation and reuse protection: the refresh token rotated by an audience fetch is saved, so the session refreshes on")
    func realServerRotation() async throws {
        let server = try OAuthServer.require()
        let client = try server.confidentialClient()
        let folder = try SessionFolder()
        defer { folder.cleanUp() }
        let issued = try server.passwordGrant(scope: "read")
        let session = try folder.session()
        _ = await session.restore()
        try await session.signIn(user: User(id: try server.userID, onboardingComplete: true), credentials: issued)
        let first = try await session.validCredentials(forAudience: "https://api.example.com", refresher: client.audienceRefresher)
        #expect(first.accessToken != issued.accessToken)
        // The server rotated (and so revoked) the first refresh token; the saved one is the new one.
        let old = try #require(issued.refreshToken)
        #expect(try server.records(of: old).revoked)
        let refreshed = try await session.refreshNow(refresher: client.refresher)
        #expect(refreshed.accessToken != issued.accessToken)
        #expect(await session.restore().name == "signedIn")
    }
}
