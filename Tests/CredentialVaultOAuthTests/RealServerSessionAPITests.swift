import CredentialVault
import CredentialVaultOAuth
import Foundation
import OAuthServerSupport
import Testing
import TestScheduling
import VaultCrypto

/// The app developer's calls against the real server: the one call at launch
/// (`credentials(minTTL:client:)`), sign-out and guest mode that revoke, and a failed revocation
/// kept sealed and retried.
@Suite("OAuth against the real server: the app's session calls", .blockingWork, .enabled(if: OAuthServer.shouldRun))
struct RealServerSessionAPITests {
    /// A client of the confidential app whose revocation endpoint answers 500 (the stand-in), with
    /// the same issuer and id as `server.confidentialClient()`, so its tokens are that client's.
    func failingRevocationClient(_ server: OAuthServer) throws -> OAuthClient {
        try OAuthClient(configuration: OAuthConfiguration(
            issuer: try server.issuer,
            endpoints: OAuthEndpoints(revocation: try server.standIn.appendingPathComponent("500/revoke-\(UUID().uuidString)")),
            clientID: try server.string("confidential_client_id"),
            authentication: .clientSecretBasic(try server.secret("confidential")), retry: .never))
    }

    /// A session in a new folder with alice signed in with real tokens from the server.
    func aliceSignedIn(_ server: OAuthServer, _ folder: SessionFolder) async throws -> (SessionManager, Credentials) {
        let session = try folder.session()
        _ = await session.restore()
        let initial = try server.passwordGrant()
        try await session.signIn(user: User(id: "alice", onboardingComplete: true), credentials: initial)
        return (session, initial)
    }

    @Test("a revocation that failed is kept sealed, hidden from items, and revoked by the next call that reaches the server")
    func failedRevocationIsRetried() async throws {
        let server = try OAuthServer.require()
        let folder = try SessionFolder()
        defer { folder.cleanUp() }
        let (session, initial) = try await aliceSignedIn(server, folder)
        let failing = try failingRevocationClient(server)
        defer { Task { try? await failing.shutdown() } }
        let report = try await session.signOut(revokingWith: failing)
        #expect(!report.succeeded)
        #expect(await session.restore().name == "guest")
        #expect(try !server.records(of: try #require(initial.refreshToken)).revoked)
        // Kept in the vault, under its own owner, never among the items.
        let kept = try folder.store().list(owner: "revocation:pending")
        #expect(Set(kept.map(\.kind)) == [.refreshToken, .accessToken])
        #expect(try await session.items().isEmpty)
        // A client of another server or id is never given them.
        let stranger = try OAuthClient(configuration: OAuthConfiguration(
            issuer: try server.standIn, endpoints: OAuthEndpoints(revocation: try server.standIn.appendingPathComponent("ok/revoke")),
            clientID: try server.string("confidential_client_id"), retry: .never))
        defer { Task { try? await stranger.shutdown() } }
        #expect(await session.retryPendingRevocations(client: stranger).outcome.isNothingToRevoke)
        #expect(try folder.store().list(owner: "revocation:pending").count == 2)
        // The next sign-out through the real client (nobody signed in now) revokes them at the server.
        let client = try server.confidentialClient()
        defer { Task { try? await client.shutdown() } }
        _ = try await session.signOut(revokingWith: client)
        #expect(try server.records(of: try #require(initial.refreshToken)).revoked)
        #expect(try server.records(of: initial.accessToken).revoked)
        #expect(try folder.store().list(owner: "revocation:pending").isEmpty)
    }

    @Test("recoverFromMissingProfile(revokingWith:): the dropped session's tokens are revoked at the server, then removed")
    func missingProfileRecoveryRevokes() async throws {
        let server = try OAuthServer.require()
        let folder = try SessionFolder()
        defer { folder.cleanUp() }
        let (_, initial) = try await aliceSignedIn(server, folder)
        try FileManager.default.removeItem(atPath: folder.path + "/vault/profile.json")
        let session = try folder.session()
        guard case .unavailable = await session.restore() else { Issue.record("expected unavailable"); return }
        let client = try server.confidentialClient()
        defer { Task { try? await client.shutdown() } }
        let reports = try await session.recoverFromMissingProfile(revokingWith: client)
        #expect(reports.keys.sorted() == ["alice"])
        #expect(reports["alice"]?.succeeded == true)
        #expect(try server.records(of: try #require(initial.refreshToken)).revoked)
        #expect(await session.restore().name == "guest")
    }

    @Test("at most 16 tokens wait, the oldest go first, and none older than 30 days is kept")
    func pendingRevocationsAreBounded() async throws {
        let server = try OAuthServer.require()
        let folder = try SessionFolder()
        defer { folder.cleanUp() }
        let failing = try failingRevocationClient(server)
        defer { Task { try? await failing.shutdown() } }
        let session = try folder.session()
        _ = await session.restore()
        var first: Credentials?
        for index in 0..<9 {   // 9 sign-outs × 2 tokens = 18 kept, capped at 16
            let tokens = Credentials(accessToken: SecureBytes(copying: Array("access-\(index)".utf8)),
                                     refreshToken: SecureBytes(copying: Array("refresh-\(index)".utf8)),
                                     expiresAt: Date().addingTimeInterval(3600))
            if index == 0 { first = tokens }
            try await session.signIn(user: User(id: "u\(index)"), credentials: tokens)
            _ = try await session.signOut(revokingWith: failing)
        }
        let kept = try folder.store().snapshot { view in
            try view.list(owner: "revocation:pending").map { try view.secret(named: $0.name, owner: "revocation:pending") }
        }
        #expect(kept.count == 16)
        #expect(!kept.contains(try #require(first?.refreshToken)), "the oldest went first")
        // Thirty-one days on, every one of them is dropped untried.
        let later = SessionManager(directory: folder.path + "/vault", key: try VaultKey.fromKeyFile(path: folder.keyPath),
                                   configuration: SessionConfiguration(clock: { Date().addingTimeInterval(31 * 24 * 3600) }))
        #expect(await later.retryPendingRevocations(client: failing).outcome.isNothingToRevoke)
        #expect(try folder.store().list(owner: "revocation:pending").isEmpty)
    }

    @Test("enterGuestMode(revokingWith:) while signed in revokes the user's tokens at the server")
    func guestModeRevokes() async throws {
        let server = try OAuthServer.require()
        let folder = try SessionFolder()
        defer { folder.cleanUp() }
        let (session, initial) = try await aliceSignedIn(server, folder)
        await session.registerDefaults(["theme": "light"])
        try await session.set("dark", forKey: "theme")
        let client = try server.confidentialClient()
        defer { Task { try? await client.shutdown() } }
        let report = try await session.enterGuestMode(revokingWith: client)
        #expect(report.revocation.succeeded && report.revocation.revoked == ["refresh_token", "access_token"])
        #expect(await session.restore() == .guest(anonymousID: report.anonymousID))
        #expect(try server.records(of: try #require(initial.refreshToken)).revoked)
        #expect(try await session.string(forKey: "theme") == "light")
        // Nobody signed in: nothing to revoke.
        #expect(try await session.enterGuestMode(revokingWith: client).revocation.outcome.isNothingToRevoke)
    }

    @Test("signOut(revokingWith:localData:resetSettings:) in one call: items kept, settings reset, tokens revoked")
    func signOutComposes() async throws {
        let server = try OAuthServer.require()
        let folder = try SessionFolder()
        defer { folder.cleanUp() }
        let (session, initial) = try await aliceSignedIn(server, folder)
        try await session.saveItem(string: "fav", named: "favourites")
        await session.registerDefaults(["theme": "light"])
        try await session.set("dark", forKey: "theme")
        let client = try server.confidentialClient()
        defer { Task { try? await client.shutdown() } }
        let report = try await session.signOut(revokingWith: client, localData: .keep, resetSettings: true)
        #expect(report.succeeded)
        #expect(try folder.store().list(owner: "user:alice").map(\.name) == ["favourites"])
        #expect(try await session.string(forKey: "theme") == "light")
        #expect(try server.records(of: initial.accessToken).revoked)
    }

    @Test("credentials(minTTL:client:): valid, refreshed, guest, server down (still valid or offline), rejected (session ended)")
    func oneCallAtLaunch() async throws {
        let server = try OAuthServer.require()
        let folder = try SessionFolder()
        defer { folder.cleanUp() }
        let client = try server.confidentialClient()
        defer { Task { try? await client.shutdown() } }
        let session = try folder.session()
        await #expect(throws: SessionCredentialsError.signInRequired(returning: nil)) { try await session.credentials(client: client) }

        let initial = try server.passwordGrant()
        try await session.signIn(user: User(id: "alice"), credentials: initial.validLocally)   // onboarding not done: still credentials
        #expect(try await session.credentials(client: client).accessToken == initial.accessToken)
        // Expired locally: refreshed silently through the real server.
        try await session.signOut()
        try await session.signIn(user: User(id: "alice"), credentials: initial.expiredLocally)
        let fresh = try await session.credentials(client: client)
        #expect(fresh.accessToken != initial.accessToken)
        #expect(try server.records(of: try #require(initial.refreshToken)).revoked, "rotated at the server")

        // The server down: a token valid now but not for minTTL is returned; an expired one is offline.
        let down = try OAuthClient(configuration: OAuthConfiguration(
            issuer: nil, endpoints: OAuthEndpoints(token: URL(string: "http://127.0.0.1:9/t")), clientID: "x", retry: .never))
        defer { Task { try? await down.shutdown() } }
        try await session.signOut()
        try await session.signIn(user: User(id: "alice"), credentials: fresh.validLocally)
        #expect(try await session.credentials(minTTL: .seconds(30 * 86_400), client: down).accessToken == fresh.accessToken)
        try await session.signOut()
        let expired = fresh.expiredLocally   // its expiry is "a minute before now" when read: read once
        try await session.signIn(user: User(id: "alice"), credentials: expired)
        do {
            _ = try await session.credentials(client: down)
            Issue.record("an expired token with the server down was returned")
        } catch let SessionCredentialsError.offline(until) {
            let expected = try #require(expired.expiresAt)
            #expect(abs(try #require(until).timeIntervalSince(expected)) < 1, "the stored token's expiry (kept to the millisecond)")
        }
        #expect(await session.restore().name == "expired", "offline keeps the session")

        // The server rejects the refresh token: the session ends, and the app is told who should sign in again.
        try await client.revoke(try #require(fresh.refreshToken), hint: "refresh_token")
        await #expect(throws: SessionCredentialsError.signInRequired(returning: User(id: "alice"))) {
            try await session.credentials(client: client)
        }
        #expect(await session.restore().name == "guest")
    }
}

@Suite("OAuth against the real server: sign-in in one call", .blockingWork, .enabled(if: OAuthServer.shouldRun))
struct RealServerOneCallSignInTests {
    @Test("signIn(using: .device(show:)): the code shown through the app's closure, approved, the user id from the server, the guest's items moved")
    func deviceSignInInOneCall() async throws {
        let server = try OAuthServer.require()
        let client = try server.deviceClient()
        defer { Task { try? await client.shutdown() } }
        let folder = try SessionFolder()
        defer { folder.cleanUp() }
        let session = try folder.session()
        _ = await session.restore()
        try await session.saveItem(NewEntry(name: "draft", secret: SecureBytes(copying: Array("guest-draft".utf8)), transferable: true))
        let shown = Shown()
        let result = try await session.signIn(using: .device { authorization in
            shown.set(authorization.userCode)
            // The user approves elsewhere, a moment later (the poll sees authorization_pending first).
            Task {
                try? await Task.sleep(for: .milliseconds(1200))
                // An unstructured task runs on the cooperative pool: the script's wait goes to a thread of its own.
                _ = try? await BlockingWork.run { try server.approve(authorization) }
            }
        }, client: client)
        #expect(shown.value?.isEmpty == false)
        #expect(result.user.id == (try server.userID))
        #expect(result.migration.moved == ["draft"])
        #expect(await session.restore().user?.id == (try server.userID))
        #expect(try await session.itemString(named: "draft") == "guest-draft")
        // Signed in already: refused before any code is shown.
        let again = Shown()
        await #expect(throws: VaultError.self) {
            try await session.signIn(using: .device { again.set($0.userCode) }, client: client)
        }
        #expect(again.value == nil)
    }
}

final class Shown: @unchecked Sendable {
    private let lock = NSLock()
    private var code: String?
    func set(_ value: String) { lock.lock(); code = value; lock.unlock() }
    var value: String? { lock.lock(); defer { lock.unlock() }; return code }
}

extension RevocationReport.Outcome {
    var isNothingToRevoke: Bool {
        if case .nothingToRevoke = self { return true }
        return false
    }
}
