import Foundation
import Synchronization
import Testing
@testable import CredentialVault
import VaultCrypto

/// A fleet session's store in memory: what `FleetBackend` asks of PostgreSQL (`FleetSessionStore`),
/// enough to test the backend's rules without a database.
final class MemoryFleetStore: FleetSessionStore {
    private let sessions = Mutex<[String: Credentials]>([:])
    private let refreshes = Mutex(0)
    var refreshCount: Int { refreshes.withLock { $0 } }

    var storageKind: StorageKind { .postgres }
    var storageGeneration: UInt64 { 0 }
    func listEntries(owner: String?) async throws -> [EntryMetadata] { [] }
    func readEntry(named name: String, owner: String) async throws -> VaultEntry { throw VaultError.entryNotFound(name) }
    func storeEntries(_ entries: [NewEntry], replace: Bool) async throws -> [EntryMetadata] { [] }
    func removeEntry(named name: String, owner: String) async throws { throw VaultError.entryNotFound(name) }
    func verifyAll() async throws -> VerificationReport { throw VaultError(.unsupportedOperation, "not in memory") }
    func closeStorage() async {}

    func saveCredentials(_ credentials: Credentials, session: String) async throws {
        sessions.withLock { all in
            var saved = credentials
            if saved.refreshToken == nil { saved.refreshToken = all[session]?.refreshToken }
            all[session] = saved
        }
    }

    func validCredentials(session: String, isValid: @escaping @Sendable (Credentials) -> Bool,
                          refresher: @escaping @Sendable (SecureBytes) async throws -> Credentials) async throws -> Credentials {
        let stored = try await storedCredentials(session: session)
        if isValid(stored) { return stored }
        guard let refreshToken = stored.refreshToken else { throw VaultError(.sessionExpired, "no refresh token") }
        refreshes.withLock { $0 += 1 }
        let fresh = try await refresher(refreshToken)
        try await saveCredentials(fresh, session: session)
        return try await storedCredentials(session: session)
    }

    func storedCredentials(session: String) async throws -> Credentials {
        guard let stored = sessions.withLock({ $0[session] }) else { throw VaultError(.notSignedIn, "no tokens") }
        return stored
    }

    func removeCredentials(session: String) async throws -> Credentials? {
        sessions.withLock { $0.removeValue(forKey: session) }
    }
}

/// The backend seam (issue 35.2): a session chooses its backend once, in its initialiser, and what
/// a backend cannot do is refused in one place, in that backend's own words.
@Suite struct SessionBackendTests {
    static func fleet(clock: TestClock) -> (SessionManager, MemoryFleetStore) {
        let store = MemoryFleetStore()
        return (SessionManager(fleet: store, session: "svc", configuration: SessionConfiguration(clock: { clock.now })), store)
    }

    static func tokens(_ access: String, lifetime: TimeInterval, clock: TestClock) -> Credentials {
        Credentials(accessToken: secret(access), refreshToken: secret("rt-\(access)"),
                    expiresAt: clock.now.addingTimeInterval(lifetime), issuedAt: clock.now)
    }

    /// The code and message of what `body` throws.
    static func refusal(_ body: () async throws -> Void) async -> (VaultError.Code, String)? {
        do {
            try await body()
            return nil
        } catch let error as VaultError {
            return (error.code, error.message)
        } catch {
            return nil
        }
    }

    @Test func aFleetSessionRefusesWhatOnlyADeviceHasInItsOwnWords() async throws {
        let (session, _) = Self.fleet(clock: TestClock())
        let calls: [(String, () async throws -> Void)] = [
            ("guest mode", { _ = try await session.enterGuestMode() }),
            ("onboarding", { try await session.completeOnboarding() }),
            ("items", { try await session.saveItem(string: "v", named: "item") }),
            ("items", { _ = try await session.items() }),
            ("guest items", { _ = try await session.guestItems() }),
            ("settings", { _ = try await session.setting("theme") }),
            ("sign-in screen", { _ = try await session.requireSignIn() }),
            ("profile recovery", { _ = try await session.recoverFromMissingProfile { _, _ in } }),
            ("device data to wipe", { try await session.wipeAll() }),
        ]
        for (feature, call) in calls {
            let refused = await Self.refusal(call)
            #expect(refused?.0 == .unsupportedOperation, "\(feature)")
            #expect(refused?.1 == "a fleet session has no \(feature): only the session's tokens are shared")
        }
        let audience = await Self.refusal { _ = try await session.validCredentials(forAudience: "https://api.example") { _, _ in
            Issue.record("no audience token is asked for")
            throw VaultError(.io, "unreachable")
        } }
        #expect(audience?.0 == .unsupportedOperation)
        #expect(audience?.1 == "per-audience tokens are kept in the vault file's session only")
        // What a fleet session does not keep: no profile, no pending revocations.
        #expect(await session.currentUser == nil)
        #expect(try await session.keepForRevocation([(secret("rt"), "refresh_token")], server: "https://as.example", clientID: "c") == false)
        #expect(try await session.pendingRevocations().isEmpty)
    }

    @Test func aFleetSessionsTokensAreTheSessionsOwnAndRefreshThroughItsStore() async throws {
        let clock = TestClock()
        let (session, store) = Self.fleet(clock: clock)
        #expect(await session.restore() == .guest(anonymousID: ""))
        let wrongUser = await Self.refusal { try await session.signIn(user: User(id: "alice"), credentials: Self.tokens("at-1", lifetime: 600, clock: clock)) }
        #expect(wrongUser?.0 == .invalidInput)
        try await session.signIn(user: User(id: "svc"), credentials: Self.tokens("at-1", lifetime: 600, clock: clock))
        #expect(await session.restore().name == "signedIn")
        #expect(await session.hasValidCredentials())
        #expect(await session.canRefresh)
        #expect(try await session.validCredentials { _ in Self.tokens("never", lifetime: 600, clock: clock) }.accessToken == secret("at-1"))
        #expect(store.refreshCount == 0)

        clock.advance(by: 600)
        #expect(await session.peek().name == "expired")
        #expect(await session.hasValidCredentials() == false)
        let fresh = try await session.validCredentials { refreshToken in
            #expect(refreshToken == secret("rt-at-1"))
            return Self.tokens("at-2", lifetime: 600, clock: clock)
        }
        #expect(fresh.accessToken == secret("at-2"))
        #expect(store.refreshCount == 1)
        _ = try await session.renew { _ in Self.tokens("at-3", lifetime: 600, clock: clock) }
        #expect(store.refreshCount == 2)

        let rejected = await Self.refusal { _ = try await session.refreshNow { _ in throw RefreshFailure.invalidGrant(description: nil) } }
        #expect(rejected?.0 == .sessionExpired)
        // Every replica sees the same answer: the fleet's tokens stay.
        #expect(try await store.storedCredentials(session: "svc").accessToken == secret("at-3"))

        let removed = try await session.signOut()
        #expect(removed?.accessToken == secret("at-3"))
        #expect(await session.restore() == .guest(anonymousID: ""))
        // The client's own token: fetched and saved when the fleet has none.
        let client = try await session.clientCredentials(clientID: "c") { Self.tokens("cc-1", lifetime: 600, clock: clock) }
        #expect(client.accessToken == secret("cc-1"))
        #expect(try await store.storedCredentials(session: "svc").accessToken == secret("cc-1"))
    }

    @Test func aSessionWithoutItsKeyFindsAnExistingVaultLocked() async throws {
        let fixture = try SessionFixture()
        defer { fixture.cleanUp() }
        let session = try fixture.session()
        try await session.signIn(user: User(id: "alice", onboardingComplete: true), credentials: fixture.credentials(expiresIn: 3600))
        let keyless = try fixture.session(key: .some(nil))
        #expect(await keyless.peek().name == "unavailable")
        #expect(await keyless.restore().name == "unavailable")
        await #expect(throws: SessionUnavailable.self) { _ = try await keyless.items() }
        await #expect(throws: SessionUnavailable.self) { try await keyless.saveItem(string: "v", named: "item") }
    }

    /// Review finding 9: guest mode where the vault cannot be opened (no key here; through the
    /// agent the same check refuses it) signed the user out first and then failed `.locked`.
    @Test func aRefusedGuestModeLeavesTheUserSignedIn() async throws {
        let fixture = try SessionFixture()
        defer { fixture.cleanUp() }
        let session = try fixture.session()
        let credentials = fixture.credentials(expiresIn: 3600)
        try await session.signIn(user: User(id: "alice", onboardingComplete: true), credentials: credentials)
        let keyless = try fixture.session(key: .some(nil))
        let refused = await #expect(throws: SessionUnavailable.self) { _ = try await keyless.enterGuestMode() }
        #expect(refused?.reason == .locked)
        let after = try fixture.session()
        guard case let .signedIn(user, kept) = await after.restore() else {
            Issue.record("the refused guest mode changed the session: \(await after.restore())")
            return
        }
        #expect(user.id == "alice" && kept.accessToken == credentials.accessToken)
    }
}
