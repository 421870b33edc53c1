@testable import CredentialVault
import CredentialVaultPostgres
import Foundation
import Synchronization
import Testing
import TestScheduling
import VaultCrypto

/// One session model: the same `SessionManager` over the vault file and over a fleet session in
/// PostgreSQL, with the same expiry rule (leeway capped at half the token's life, the injected
/// clock), the same refresh and `client_credentials` behaviour; what a fleet does not have fails
/// with `.unsupportedOperation`.
@Suite("One SessionManager over the vault file and a fleet (PostgreSQL)", .blockingWork, .enabled(if: PostgresServer.shouldRun))
struct OneSessionModelTests {
    enum Backend: String, CaseIterable, CustomStringConvertible {
        case file, fleet
        var description: String { rawValue }
    }

    /// A clock that stands still until the test moves it (the session's, and the PostgreSQL
    /// store's, which stamps a token's issue time).
    final class MovableClock: Sendable {
        private let offset = Mutex<TimeInterval>(0)
        let start = Date()
        var now: Date { start.addingTimeInterval(offset.withLock { $0 }) }
        func advance(_ seconds: TimeInterval) { offset.withLock { $0 += seconds } }
    }

    /// A session named "svc" over `backend`, with `clock`; `cleanUp` removes what it made.
    static func session(_ backend: Backend, clock: MovableClock) async throws -> (SessionManager, cleanUp: () async -> Void) {
        var configuration = SessionConfiguration(clock: { clock.now })
        configuration.leeway = .seconds(60)
        switch backend {
        case .file:
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("one-session-\(UUID().uuidString)").path
            var fileConfiguration = configuration
            fileConfiguration.rollbackMemory = .disabled
            let session = SessionManager(directory: directory, key: try PostgresServer.newKey(), configuration: fileConfiguration)
            return (session, { try? FileManager.default.removeItem(atPath: directory) })
        case .fleet:
            var options = PostgresServer.options()
            options.clock = { clock.now }
            let store = try await PostgresSecretStore.create(configuration: try PostgresServer.configuration(), key: try PostgresServer.newKey(),
                                                             options: options)
            return (SessionManager(fleet: store, session: "svc", configuration: configuration), { await store.close() })
        }
    }

    static func tokens(_ access: String, lifetime: TimeInterval, from now: Date) -> Credentials {
        Credentials(accessToken: SecureBytes(copying: Array(access.utf8)), refreshToken: SecureBytes(copying: Array("rt-\(access)".utf8)),
                    expiresAt: now.addingTimeInterval(lifetime), issuedAt: now)
    }

    @Test("the same tokens expire at the same moment and refresh once", arguments: Backend.allCases)
    func sameExpiryRuleAndRefresh(backend: Backend) async throws {
        let clock = MovableClock()
        let (session, cleanUp) = try await Self.session(backend, clock: clock)
        // A 100 s token: the 60 s leeway is capped at 50 s, so it is valid for its first 50 s.
        try await session.signIn(user: User(id: "svc", onboardingComplete: true), credentials: Self.tokens("at-1", lifetime: 100, from: clock.now))
        #expect(await session.peek().name == "signedIn")
        clock.advance(45)
        #expect(await session.peek().name == "signedIn", "45 s in: 55 s left, more than the capped leeway")
        clock.advance(10)
        let expired = await session.peek()
        #expect(expired.name == "expired", "55 s in: 45 s left, less than the capped leeway")
        let refreshes = Mutex(0)
        let fresh = try await session.validCredentials { refreshToken in
            refreshes.withLock { $0 += 1 }
            #expect(refreshToken == SecureBytes(copying: Array("rt-at-1".utf8)))
            return Self.tokens("at-2", lifetime: 3600, from: clock.now)
        }
        #expect(fresh.accessToken == SecureBytes(copying: Array("at-2".utf8)))
        let again = try await session.validCredentials { _ in
            refreshes.withLock { $0 += 1 }
            return Self.tokens("at-3", lifetime: 3600, from: clock.now)
        }
        #expect(again.accessToken == SecureBytes(copying: Array("at-2".utf8)))
        #expect(refreshes.withLock { $0 } == 1)
        await cleanUp()
    }

    @Test("invalid_grant ends as sessionExpired", arguments: Backend.allCases)
    func invalidGrantIsSessionExpired(backend: Backend) async throws {
        let clock = MovableClock()
        let (session, cleanUp) = try await Self.session(backend, clock: clock)
        try await session.signIn(user: User(id: "svc", onboardingComplete: true), credentials: Self.tokens("at-1", lifetime: 10, from: clock.now))
        clock.advance(60)
        #expect(await errorCode { _ = try await session.validCredentials { _ in throw RefreshFailure.invalidGrant(description: "revoked") } }
                == .sessionExpired)
        await cleanUp()
    }

    @Test("client_credentials: fetched when missing or expired, kept while valid", arguments: Backend.allCases)
    func clientCredentialsOnce(backend: Backend) async throws {
        let clock = MovableClock()
        let (session, cleanUp) = try await Self.session(backend, clock: clock)
        let fetches = Mutex(0)
        let fetch: @Sendable () async throws -> Credentials = {
            let count = fetches.withLock { value -> Int in
                value += 1
                return value
            }
            return Credentials(accessToken: SecureBytes(copying: Array("cc-\(count)".utf8)), expiresAt: clock.now.addingTimeInterval(600),
                               issuedAt: clock.now)
        }
        let first = try await session.clientCredentials(clientID: "daemon", fetch: fetch)
        let second = try await session.clientCredentials(clientID: "daemon", fetch: fetch)
        #expect(first.accessToken == SecureBytes(copying: Array("cc-1".utf8)))
        #expect(second.accessToken == first.accessToken)
        clock.advance(590)
        let third = try await session.clientCredentials(clientID: "daemon", fetch: fetch)
        #expect(third.accessToken == SecureBytes(copying: Array("cc-2".utf8)))
        #expect(fetches.withLock { $0 } == 2)
        await cleanUp()
    }

    @Test("a fleet session has no guest mode, onboarding, items or settings")
    func fleetRefusesDeviceFeatures() async throws {
        let (session, cleanUp) = try await Self.session(.fleet, clock: MovableClock())
        #expect(await errorCode { _ = try await session.enterGuestMode() } == .unsupportedOperation)
        #expect(await errorCode { try await session.completeOnboarding() } == .unsupportedOperation)
        #expect(await errorCode { try await session.saveItem(string: "v", named: "item") } == .unsupportedOperation)
        #expect(await errorCode { _ = try await session.setting("theme") } == .unsupportedOperation)
        #expect(await errorCode { try await session.wipeAll() } == .unsupportedOperation)
        // The session's own calls work, and the state says nobody is signed in yet.
        #expect(await session.peek().name == "guest")
        #expect(try await session.signOut() == nil)
        await cleanUp()
    }
}
