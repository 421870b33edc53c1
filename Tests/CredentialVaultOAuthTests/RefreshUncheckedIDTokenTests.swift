import CredentialVault
@testable import CredentialVaultOAuth
import Foundation
import OAuthServerSupport
import Synchronization
import Testing
import TestScheduling
import VaultCrypto

/// Review finding 1 (after issue 35): the real server rotates refresh tokens with reuse
/// protection, so a refresh whose answer is thrown away ends the session at the next refresh. A
/// refreshed ID token that cannot be checked now (the JWKS down, the refresh's deadline run out
/// while fetching it) is dropped, and the new tokens saved; one that fails a check still refuses
/// the whole answer (issue 36.7, BrowserSignInCLITests.refusedRefreshIDToken).
@Suite("A refreshed ID token that cannot be checked now: the rotated tokens are kept", .blockingWork, .enabled(if: OAuthServer.shouldRun))
struct RefreshUncheckedIDTokenTests {
    /// The confidential client of the real server, with its JWKS at `jwks` (the real token endpoint and issuer).
    func client(_ server: OAuthServer, jwks: URL, requestTimeout: Duration = .seconds(10), retry: RetryPolicy = .never) throws -> OAuthClient {
        try OAuthClient(configuration: OAuthConfiguration(
            issuer: try server.issuer, endpoints: OAuthEndpoints(jwks: jwks), clientID: try server.string("confidential_client_id"),
            authentication: .clientSecretBasic(try server.secret("confidential")), requestTimeout: requestTimeout, retry: retry))
    }

    /// alice signed in with real tokens (scope openid: refresh answers carry an ID token), then
    /// refreshed once through the sound client, so that the session holds a verified ID token.
    func aliceWithVerifiedIdentity(_ server: OAuthServer, _ folder: SessionFolder) async throws -> (SessionManager, Credentials) {
        let session = try folder.session()
        _ = await session.restore()
        try await session.signIn(user: User(id: try server.userID, onboardingComplete: true),
                                 credentials: try server.passwordGrant(scope: "openid read"))
        let sound = try server.confidentialClient()
        defer { Task { try? await sound.shutdown() } }
        let first = try await session.refreshNow(client: sound)
        try #require(first.idToken != nil, "the real server's refresh answer carries an ID token")
        return (session, first)
    }

    /// After the refresh through `client`: new tokens saved, the old refresh token dead at the server
    /// (rotated), the verified ID token kept, one warning given (when `warnings` were collected),
    /// and the session goes on refreshing.
    func expectRotatedTokensKept(_ server: OAuthServer, _ session: SessionManager, before: Credentials, after: Credentials,
                                 warnings: [String]?) async throws {
        let (_, stored) = try await session.currentCredentials()
        #expect(after.accessToken != before.accessToken && after.refreshToken != before.refreshToken)
        #expect(stored.refreshToken == after.refreshToken, "the rotated refresh token is saved")
        #expect(stored.idToken == before.idToken, "the unchecked ID token is dropped, the verified one kept")
        #expect(try server.records(of: try #require(before.refreshToken)).revoked, "the server rotated the old refresh token")
        if let warnings { #expect(warnings.count == 1 && warnings.first?.contains("could not be checked") == true, "\(warnings)") }
        let sound = try server.confidentialClient()
        defer { Task { try? await sound.shutdown() } }
        let next = try await session.refreshNow(client: sound)
        #expect(next.refreshToken != after.refreshToken && next.idToken != nil, "the session lives on")
        #expect(await session.restore().name != "guest")
    }

    @Test("the JWKS down during 'refreshNow' (vault refresh; the public call too, which logs the warning): the new tokens are saved without the ID token",
          arguments: [true, false])
    func jwksDown(warned: Bool) async throws {
        let server = try OAuthServer.require()
        let folder = try SessionFolder()
        defer { folder.cleanUp() }
        let (session, before) = try await aliceWithVerifiedIdentity(server, folder)
        let down = try client(server, jwks: try server.standIn.appendingPathComponent("500/jwks-\(UUID().uuidString)"))
        defer { Task { try? await down.shutdown() } }
        let warnings = Warnings()
        let after = try await warned ? session.refreshNow(client: down, warning: warnings.add) : session.refreshNow(client: down)
        #expect(after.idToken == before.idToken)
        try await expectRotatedTokensKept(server, session, before: before, after: after, warnings: warned ? warnings.all : nil)
    }

    @Test("the refresh's overall deadline runs out while fetching the JWKS, after the token endpoint answered (vault token): the new tokens are saved")
    func deadlineDuringJWKS() async throws {
        let server = try OAuthServer.require()
        let folder = try SessionFolder()
        defer { folder.cleanUp() }
        let (session, verified) = try await aliceWithVerifiedIdentity(server, folder)
        // Expired by our clock, so that validCredentials refreshes.
        try await session.signOut()
        try await session.signIn(user: User(id: try server.userID, onboardingComplete: true), credentials: verified.expiredLocally)
        // The stand-in's /slow/ answers after 10 s: the JWKS fetch is cut at the refresh's deadline
        // (two attempts of at most 2 s each), after the real token endpoint answered.
        let slow = try client(server, jwks: try server.standIn.appendingPathComponent("slow/jwks-\(UUID().uuidString)"),
                              requestTimeout: .seconds(2),
                              retry: RetryPolicy(maximumAttempts: 2, baseDelay: .milliseconds(50), maximumDelay: .milliseconds(100),
                                                 maximumRetryAfter: .milliseconds(100)))
        defer { Task { try? await slow.shutdown() } }
        let warnings = Warnings()
        let after = try await session.validCredentials(minTTL: .zero, client: slow, retryingRevocations: false, warning: warnings.add)
        try await expectRotatedTokensKept(server, session, before: verified, after: after, warnings: warnings.all)
    }
}

/// The warnings a refresh gave.
final class Warnings: Sendable {
    private let texts = Mutex<[String]>([])
    var add: @Sendable (String) -> Void { { [self] text in texts.withLock { $0.append(text) } } }
    var all: [String] { texts.withLock { $0 } }
}
