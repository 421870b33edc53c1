import CredentialVault
import CredentialVaultOAuth
import Foundation
import OAuthServerSupport
import Testing
import TestScheduling
import VaultCrypto

/// Failures: a refresh token revoked at the real server, the server down, and a stand-in
/// beside it answering 500, garbage or too late. Transient failures keep the session.
@Suite("OAuth against the real server: failures", .blockingWork, .enabled(if: OAuthServer.shouldRun))
struct RealServerResilienceTests {
    /// A signed-in session whose access token we consider expired, with real tokens from the server.
    func expiredSession(_ server: OAuthServer, _ folder: SessionFolder) async throws -> (SessionManager, Credentials) {
        let session = try folder.session()
        _ = await session.restore()
        let initial = try server.passwordGrant()
        try await session.signIn(user: User(id: try server.userID, onboardingComplete: true), credentials: initial.expiredLocally)
        return (session, initial)
    }

    func client(token: URL, timeout: Duration = .seconds(5), retry: RetryPolicy = RetryPolicy(baseDelay: .milliseconds(20))) throws -> OAuthClient {
        try OAuthClient(configuration: OAuthConfiguration(issuer: nil, endpoints: OAuthEndpoints(token: token),
                                                          clientID: "vault-confidential", requestTimeout: timeout, retry: retry))
    }

    /// The session is still signed in (expired) and holds the refresh token it had.
    func expectKept(_ folder: SessionFolder, refreshToken: SecureBytes?) async throws {
        let session = try folder.session()
        let state = await session.restore()
        #expect(state.name == "expired")
        let seen = SeenToken()
        _ = try? await session.validCredentials { token in
            seen.set(token)
            throw CancellationError()
        }
        #expect(seen.value != nil)
        if let refreshToken { #expect(seen.value == refreshToken) }
    }

    @Test("a refresh token revoked at the server ends the session to guest")
    func revokedAtServer() async throws {
        let server = try OAuthServer.require()
        let folder = try SessionFolder()
        defer { folder.cleanUp() }
        let (session, initial) = try await expiredSession(server, folder)
        let client = try server.confidentialClient()
        defer { Task { try? await client.shutdown() } }
        try await client.revoke(try #require(initial.refreshToken), hint: "refresh_token")
        #expect(try server.records(of: try #require(initial.refreshToken)).revoked)

        let error = await #expect(throws: VaultError.self) { try await session.validCredentials(client: client) }
        #expect(error?.code == .sessionExpired)
        #expect(error?.message.contains("invalid_grant") == true)
        #expect(await session.restore().name == "guest")
    }

    @Test("the server down: transient, retried a bounded number of times, session kept")
    func serverDown() async throws {
        let server = try OAuthServer.require()
        let folder = try SessionFolder()
        defer { folder.cleanUp() }
        let (session, initial) = try await expiredSession(server, folder)
        let client = try client(token: URL(string: "http://127.0.0.1:9/o/token/")!)
        defer { Task { try? await client.shutdown() } }
        let error = await #expect(throws: OAuthError.self) { try await session.validCredentials(client: client) }
        #expect(error?.kind == .transient)
        #expect(error?.description.contains("token endpoint http://127.0.0.1:9/o/token/") == true)
        try await expectKept(folder, refreshToken: initial.refreshToken)
    }

    @Test("500 with Retry-After: transient, retried exactly maximumAttempts times, error text sanitised, session kept")
    func serverError() async throws {
        let server = try OAuthServer.require()
        let folder = try SessionFolder()
        defer { folder.cleanUp() }
        let (session, initial) = try await expiredSession(server, folder)
        let client = try client(token: try server.standIn.appendingPathComponent("500/token-\(UUID().uuidString)"),
                                retry: RetryPolicy(maximumAttempts: 3, baseDelay: .milliseconds(10)))
        defer { Task { try? await client.shutdown() } }
        let before = try server.standInCounts()["500"] ?? 0
        let started = ContinuousClock.now
        let error = await #expect(throws: OAuthError.self) { try await session.validCredentials(client: client) }
        let elapsed = ContinuousClock.now - started
        #expect(error?.kind == .transient)
        #expect(error?.status == 500)
        #expect(error?.retryAfter == .seconds(1))
        #expect(elapsed >= .seconds(2))                 // Retry-After: 1 honoured twice
        #expect((try server.standInCounts()["500"] ?? 0) - before >= 3)
        #expect(error?.serverErrorDescription == "down\\u{1b}[31m for maintenance")
        #expect(error?.description.unicodeScalars.contains { $0.value < 0x20 } == false)
        try await expectKept(folder, refreshToken: initial.refreshToken)
    }

    @Test("a 200 with garbage: transient (malformed body), not retried (the server may have rotated), session kept")
    func garbage() async throws {
        let server = try OAuthServer.require()
        let folder = try SessionFolder()
        defer { folder.cleanUp() }
        let (session, initial) = try await expiredSession(server, folder)
        let client = try client(token: try server.standIn.appendingPathComponent("garbage/token"))
        defer { Task { try? await client.shutdown() } }
        let error = await #expect(throws: OAuthError.self) { try await session.validCredentials(client: client) }
        #expect(error?.kind == .transient)
        #expect(error?.detail.contains("not a token response") == true)
        try await expectKept(folder, refreshToken: initial.refreshToken)
    }

    @Test("an answer after the deadline: transient, session kept")
    func slow() async throws {
        let server = try OAuthServer.require()
        let folder = try SessionFolder()
        defer { folder.cleanUp() }
        let (session, initial) = try await expiredSession(server, folder)
        let client = try client(token: try server.standIn.appendingPathComponent("slow/token"), timeout: .milliseconds(700))
        defer { Task { try? await client.shutdown() } }
        let error = await #expect(throws: OAuthError.self) { try await session.validCredentials(client: client) }
        #expect(error?.kind == .transient)
        try await expectKept(folder, refreshToken: initial.refreshToken)
    }

    @Test("invalid_client on refresh is a configuration error and keeps the session")
    func invalidClientKeepsSession() async throws {
        let server = try OAuthServer.require()
        let folder = try SessionFolder()
        defer { folder.cleanUp() }
        let (session, initial) = try await expiredSession(server, folder)
        let client = try OAuthClient(configuration: OAuthConfiguration(
            issuer: try server.issuer, clientID: "vault-confidential", authentication: .clientSecretBasic(secret("wrong"))))
        defer { Task { try? await client.shutdown() } }
        let error = await #expect(throws: OAuthError.self) { try await session.validCredentials(client: client) }
        #expect(error?.kind == .configuration)
        #expect(error?.serverError == "invalid_client")
        try await expectKept(folder, refreshToken: initial.refreshToken)
    }

    @Test("sign-out wipes locally, then revokes: the server's database says both tokens are dead")
    func signOutRevokes() async throws {
        let server = try OAuthServer.require()
        let folder = try SessionFolder()
        defer { folder.cleanUp() }
        let session = try folder.session()
        _ = await session.restore()
        let initial = try server.passwordGrant()
        try await session.signIn(user: User(id: "alice", onboardingComplete: true), credentials: initial)
        #expect(try server.records(of: initial.accessToken).kind == "access")
        let client = try server.confidentialClient()
        defer { Task { try? await client.shutdown() } }
        let report = try await session.signOut(revokingWith: client)
        #expect(report.succeeded)
        #expect(report.revoked == ["refresh_token", "access_token"])
        #expect(await session.restore().name == "guest")
        #expect(try server.records(of: try #require(initial.refreshToken)).revoked)
        #expect(try server.records(of: initial.accessToken).revoked)
    }

    @Test("a failed revocation does not block the local wipe and is reported")
    func revocationFailureReported() async throws {
        let server = try OAuthServer.require()
        let folder = try SessionFolder()
        defer { folder.cleanUp() }
        let session = try folder.session()
        _ = await session.restore()
        try await session.signIn(user: User(id: "alice", onboardingComplete: true), credentials: try server.passwordGrant())
        let client = try OAuthClient(configuration: OAuthConfiguration(
            issuer: nil, endpoints: OAuthEndpoints(token: URL(string: "http://127.0.0.1:9/t"), revocation: URL(string: "http://127.0.0.1:9/r")),
            clientID: "x", retry: .never))
        defer { Task { try? await client.shutdown() } }
        let report = try await session.signOut(revokingWith: client)
        #expect(!report.succeeded)
        #expect(report.description.contains("revocation endpoint http://127.0.0.1:9/r"))
        #expect(await session.restore().name == "guest")
    }

    @Test("discovery is fetched once per client, then cached")
    func discoveryCached() async throws {
        let server = try OAuthServer.require()
        let client = try OAuthClient(configuration: OAuthConfiguration(
            issuer: try server.standIn.appendingPathComponent("meta"), clientID: "x", retry: .never))
        defer { Task { try? await client.shutdown() } }
        let before = try server.standInCounts()["meta"] ?? 0
        let first = try await client.metadata()
        let afterFirst = try server.standInCounts()["meta"] ?? 0
        for _ in 0..<5 { _ = try await client.metadata() }
        #expect(afterFirst > before)
        #expect(try server.standInCounts()["meta"] ?? 0 == afterFirst)
        #expect(first.endpoints.revocation?.path == "/500/revoke")
    }
}

/// Captures the refresh token a refresher was handed.
final class SeenToken: @unchecked Sendable {
    private let lock = NSLock()
    private var token: SecureBytes?
    func set(_ value: SecureBytes) { lock.lock(); token = value; lock.unlock() }
    var value: SecureBytes? { lock.lock(); defer { lock.unlock() }; return token }
}

extension RealServerResilienceTests {
    /// Wall-clock bounds: run by scripts/test in a process of their own, one at a time (TimingTests).
    @Suite(.timing, .serialized) struct Timed {
        @Test("a body trickled one byte every 0.7 s: cut off at the one deadline of the whole exchange, session kept")
        func trickledBody() async throws {
            let server = try OAuthServer.require()
            let folder = try SessionFolder()
            defer { folder.cleanUp() }
            let (session, initial) = try await RealServerResilienceTests().expiredSession(server, folder)
            let client = try RealServerResilienceTests().client(token: try server.standIn.appendingPathComponent("trickle/token"), timeout: .milliseconds(1500))
            defer { Task { try? await client.shutdown() } }
            let started = ContinuousClock.now
            let error = await #expect(throws: OAuthError.self) { try await session.validCredentials(client: client) }
            let elapsed = ContinuousClock.now - started
            #expect(error?.kind == .transient)
            // The head came at once and the body would take 28 s: only a deadline over the whole
            // exchange ends it before then (a refresh is not sent twice). In a process of its own,
            // where no other test holds the threads its timer needs, 1.5 s with room for a loaded machine.
            #expect(elapsed < .seconds(10), "took \(elapsed)")
            try await RealServerResilienceTests().expectKept(folder, refreshToken: initial.refreshToken)
        }
    }
}
