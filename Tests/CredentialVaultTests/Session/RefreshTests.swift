import Foundation
import Testing
import TestScheduling
@testable import CredentialVault
import VaultCrypto

@Suite(.blockingWork) struct RefreshTests {
    @Test func validCredentialsAreReturnedWithoutRefreshing() async throws {
        let fixture = try SessionFixture()
        defer { fixture.cleanUp() }
        let session = try fixture.session()
        try await session.signIn(user: User(id: "u1"), credentials: fixture.credentials(expiresIn: 3600))
        let counter = CallCounter()
        let credentials = try await session.validCredentials(minTTL: .seconds(600)) { _ in
            counter.increment()
            throw TestFailure("must not refresh")
        }
        #expect(credentials.accessToken == secret("access-1"))
        #expect(counter.count == 0)
    }

    @Test func manyTasksShareOneRefreshAndTheNewPairIsSavedFirst() async throws {
        let fixture = try SessionFixture()
        defer { fixture.cleanUp() }
        let session = try fixture.session()
        try await session.signIn(user: User(id: "u1", onboardingComplete: true), credentials: fixture.credentials(expiresIn: 30))
        let counter = CallCounter()
        let clock = fixture.clock
        let refresher: TokenRefresher = { refreshToken in
            counter.increment()
            #expect(refreshToken == secret("refresh-1"))
            try await Task.sleep(for: .milliseconds(200))
            // No refresh token in the response: the old one must be kept.
            return Credentials(accessToken: secret("access-2"), expiresAt: clock.now.addingTimeInterval(3600))
        }
        let results = try await withThrowingTaskGroup(of: Credentials.self) { group in
            for _ in 0..<20 { group.addTask { try await session.validCredentials(refresher: refresher) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(counter.count == 1)
        #expect(results.allSatisfy { $0.accessToken == secret("access-2") })
        let restored = try await fixture.session().restore()
        #expect(restored.credentials?.accessToken == secret("access-2"))
        #expect(restored.credentials?.refreshToken == secret("refresh-1"))
    }

    @Test func invalidGrantEndsTheSessionToGuest() async throws {
        let fixture = try SessionFixture()
        defer { fixture.cleanUp() }
        let session = try fixture.session()
        try await session.signIn(user: User(id: "u1"), credentials: fixture.credentials(expiresIn: 10))
        do {
            _ = try await session.validCredentials { _ in throw RefreshFailure.invalidGrant(description: "revoked") }
            Issue.record("refresh succeeded")
        } catch let error as VaultError {
            #expect(error.code == .sessionExpired)
        }
        #expect(await session.restore().name == "guest")
        #expect(try fixture.store().list(owner: "user:u1").isEmpty)
    }

    @Test func transientFailureKeepsTheSession() async throws {
        let fixture = try SessionFixture()
        defer { fixture.cleanUp() }
        let session = try fixture.session()
        try await session.signIn(user: User(id: "u1", onboardingComplete: true), credentials: fixture.credentials(expiresIn: 10))
        struct Offline: Error {}
        await #expect(throws: Offline.self) { _ = try await session.validCredentials { _ in throw Offline() } }
        let state = await session.restore()
        guard case let .expired(_, hasRefreshToken, _) = state else { Issue.record("expected expired, got \(state)"); return }
        #expect(hasRefreshToken)
    }

    @Test func noRefreshTokenIsSessionExpired() async throws {
        let fixture = try SessionFixture()
        defer { fixture.cleanUp() }
        let session = try fixture.session()
        try await session.signIn(user: User(id: "u1"), credentials: fixture.credentials(expiresIn: 10, refresh: false))
        do {
            _ = try await session.validCredentials { _ in throw TestFailure("no refresh token to use") }
            Issue.record("refresh succeeded")
        } catch let error as VaultError {
            #expect(error.code == .sessionExpired)
        }
        // Issue 26, bug 1: the session ended, so the app is a guest and another person can sign in.
        guard case .guest = await session.restore() else { Issue.record("expected guest, got \(await session.restore())"); return }
        try await session.signIn(user: User(id: "u2"), credentials: fixture.credentials(expiresIn: 3600))
        let after = await session.restore()
        switch after {
        case .signedIn(let user, _), .needsOnboarding(let user, _): #expect(user.id == "u2")
        default: Issue.record("expected u2 signed in, got \(after)")
        }
    }

    /// Issue 26, bug 1: `requireSignIn` presents the sign-in for a session no token can renew,
    /// instead of returning the old user at once.
    @Test func requireSignInPresentsTheSignInForASessionThatCannotBeRenewed() async throws {
        let fixture = try SessionFixture()
        defer { fixture.cleanUp() }
        let session = try fixture.session()
        try await session.signIn(user: User(id: "u1", onboardingComplete: true), credentials: fixture.credentials(expiresIn: 10, refresh: false))
        let presented = Presented()
        let waiter = Task { try await session.requireSignIn { presented.mark() } }
        // Bounded by time as well as count: on two loaded cores the waiter may not run for seconds.
        let giveUp = ContinuousClock.now.advanced(by: .seconds(30))
        for _ in 0..<6_000 where await session.pendingSignInRequests == 0 && ContinuousClock.now < giveUp {
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(await session.pendingSignInRequests == 1, "the old user was not returned")
        #expect(presented.wasCalled)
        try await session.signIn(user: User(id: "u2"), credentials: fixture.credentials(expiresIn: 3600))
        #expect(try await waiter.value.id == "u2")
    }

    /// A still renewable session returns its user at once.
    @Test func requireSignInReturnsARenewableSessionsUser() async throws {
        let fixture = try SessionFixture()
        defer { fixture.cleanUp() }
        let session = try fixture.session()
        try await session.signIn(user: User(id: "u1"), credentials: fixture.credentials(expiresIn: 10))
        #expect(try await session.requireSignIn().id == "u1")
    }

    @Test func twoProcessesRefreshExactlyOnce() async throws {
        let fixture = try SessionFixture()
        defer { fixture.cleanUp() }
        // Real clock here: the workers use the system time.
        var configuration = SessionConfiguration()
        configuration.kdfPolicy = .testing
        configuration.rollbackMemory = .disabled
        let session = SessionManager(directory: fixture.directory, key: try fixture.key(), configuration: configuration)
        try await session.signIn(user: User(id: "u1"), credentials: Credentials(accessToken: secret("old"), refreshToken: secret("r"),
                                                                                   expiresAt: Date().addingTimeInterval(5)))
        let counterFile = fixture.temp.child("refresh-calls")
        _ = FileManager.default.createFile(atPath: counterFile, contents: nil)
        let workers = try (0..<2).map { _ -> Process in
            let process = Process()
            process.executableURL = URL(fileURLWithPath: try BuiltProducts.path(of: "VaultTestWorker"))
            process.arguments = ["refresh", fixture.directory, fixture.keyPath, counterFile, "500"]
            process.standardOutput = FileHandle.nullDevice
            try process.run()
            return process
        }
        for worker in workers {
            worker.waitUntilExit()
            #expect(worker.terminationStatus == 0)
        }
        let calls = String(decoding: try Data(contentsOf: URL(fileURLWithPath: counterFile)), as: UTF8.self)
            .split(separator: "\n")
        #expect(calls.count == 1, "refresh calls: \(calls)")
    }
}

/// Records that a closure ran (from the session's executor).
private final class Presented: @unchecked Sendable {
    private let lock = NSLock()
    private var called = false
    func mark() { lock.lock(); called = true; lock.unlock() }
    var wasCalled: Bool { lock.lock(); defer { lock.unlock() }; return called }
}

/// OpenID Connect Core §12.2: a refreshed ID token must name the session's issuer, subject and audience.
@Suite struct RefreshedIDTokenTests {
    /// An unsigned JWT with these claims (the OAuth client checks signatures before the session sees a token).
    func idToken(_ claims: String) -> SecureBytes {
        func encoded(_ text: String) -> String {
            Data(text.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        }
        return secret(encoded(#"{"alg":"RS256"}"#) + "." + encoded(claims) + ".c2ln")
    }

    @Test("the same identity is saved; another subject, issuer or audience refuses the refresh and keeps the session",
          arguments: [(#"{"iss":"https://a","sub":"u1","aud":"app"}"#, true),
                      (#"{"iss":"https://a","sub":"u1","aud":["app"]}"#, true),
                      (#"{"iss":"https://a","sub":"u2","aud":"app"}"#, false),
                      (#"{"iss":"https://b","sub":"u1","aud":"app"}"#, false),
                      (#"{"iss":"https://a","sub":"u1","aud":"other"}"#, false)])
    func sameIdentity(claims: String, accepted: Bool) async throws {
        let fixture = try SessionFixture()
        defer { fixture.cleanUp() }
        let session = try fixture.session()
        var first = fixture.credentials(expiresIn: 3600)
        first.idToken = idToken(#"{"iss":"https://a","sub":"u1","aud":"app"}"#)
        try await session.signIn(user: User(id: "u1", onboardingComplete: true), credentials: first)
        let clock = fixture.clock
        let refreshed = idToken(claims)
        let refresher: TokenRefresher = { _ in
            Credentials(accessToken: secret("access-2"), refreshToken: secret("refresh-2"), idToken: refreshed,
                        expiresAt: clock.now.addingTimeInterval(86_400))
        }
        if accepted {
            #expect(try await session.validCredentials(minTTL: .seconds(7200), refresher: refresher).idToken == refreshed)
        } else {
            let error = await #expect(throws: VaultError.self) {
                try await session.validCredentials(minTTL: .seconds(7200), refresher: refresher)
            }
            #expect(error?.code == .serverRefused)
            #expect(error?.message.contains("§12.2") == true)
            let kept = try await fixture.session().restore()
            #expect(kept.credentials?.accessToken == secret("access-1"))
            #expect(kept.credentials?.idToken == first.idToken)
        }
    }
}
