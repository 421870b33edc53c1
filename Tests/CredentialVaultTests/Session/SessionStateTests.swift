import Foundation
import Testing
@testable import CredentialVault
import VaultCrypto

@Suite struct SessionStateTests {
    @Test func firstLaunchIsGuestWithAStableAnonymousID() async throws {
        let fixture = try SessionFixture()
        defer { fixture.cleanUp() }
        let state = try await fixture.session().restore()
        guard case let .guest(anonymousID) = state else { Issue.record("expected guest, got \(state)"); return }
        #expect(anonymousID.count == 36)
        for _ in 0..<3 {
            let again = try await fixture.session().restore()
            guard case let .guest(sameID) = again else { Issue.record("expected guest, got \(again)"); return }
            #expect(sameID == anonymousID)
        }
        #expect(!SecretStore.exists(in: fixture.directory), "a guest without items needs no vault")
    }

    @Test func signedInRestoresUserAndCredentialsInANewManager() async throws {
        let fixture = try SessionFixture()
        defer { fixture.cleanUp() }
        let session = try fixture.session()
        _ = await session.restore()
        try await session.signIn(user: User(id: "u1", displayName: "Ada", onboardingComplete: true),
                                 credentials: fixture.credentials(expiresIn: 3600))
        let state = try await fixture.session().restore()
        guard case let .signedIn(user, credentials) = state else { Issue.record("expected signedIn, got \(state)"); return }
        #expect(user.id == "u1")
        #expect(user.displayName == "Ada")
        #expect(credentials.accessToken == secret("access-1"))
        #expect(credentials.refreshToken == secret("refresh-1"))
        #expect(credentials.scopes == ["openid", "profile"])
        #expect(credentials.expiresAt == fixture.clock.now.addingTimeInterval(3600))
        #expect(state.name == "signedIn")
    }

    @Test func unfinishedOnboardingIsItsOwnState() async throws {
        let fixture = try SessionFixture()
        defer { fixture.cleanUp() }
        let session = try fixture.session()
        try await session.signIn(user: User(id: "u1"), credentials: fixture.credentials(expiresIn: 3600))
        #expect(await session.restore().name == "needsOnboarding")
        try await session.completeOnboarding()
        #expect(await session.restore().name == "signedIn")
    }

    @Test func expiryBoundariesUseLeewayAndMinTTL() async throws {
        let fixture = try SessionFixture()
        defer { fixture.cleanUp() }
        let session = try fixture.session()
        try await session.signIn(user: User(id: "u1", onboardingComplete: true), credentials: fixture.credentials(expiresIn: 600))
        // Valid while more than leeway (60 s) + minTTL remain; exactly at the margin it is expired.
        #expect(await session.restore().name == "signedIn")
        #expect(await session.restore(minTTL: .seconds(539)).name == "signedIn")
        #expect(await session.restore(minTTL: .seconds(540)).name == "expired")
        fixture.clock.advance(by: 539)
        #expect(await session.restore().name == "signedIn")
        fixture.clock.advance(by: 1)   // 60 s left: inside the leeway
        let state = await session.restore()
        guard case let .expired(user, hasRefreshToken, _) = state else { Issue.record("expected expired, got \(state)"); return }
        #expect(user.id == "u1")
        #expect(hasRefreshToken)
        fixture.clock.advance(by: 3600)
        #expect(await session.restore().name == "expired")
    }

    @Test func noKnownExpiryCountsAsValid() async throws {
        let fixture = try SessionFixture()
        defer { fixture.cleanUp() }
        let session = try fixture.session()
        try await session.signIn(user: User(id: "u1", onboardingComplete: true), credentials: fixture.credentials(expiresIn: nil, refresh: false))
        fixture.clock.advance(by: 10 * 365 * 86400)
        #expect(await session.restore(minTTL: .seconds(86400)).name == "signedIn")
    }

    @Test func expiredWithoutRefreshTokenSaysSo() async throws {
        let fixture = try SessionFixture()
        defer { fixture.cleanUp() }
        let session = try fixture.session()
        try await session.signIn(user: User(id: "u1", onboardingComplete: true), credentials: fixture.credentials(expiresIn: 30, refresh: false))
        let state = await session.restore()
        guard case let .expired(_, hasRefreshToken, _) = state else { Issue.record("expected expired, got \(state)"); return }
        #expect(!hasRefreshToken)
    }

    @Test func wrongKeyIsUnavailableNotGuest() async throws {
        let fixture = try SessionFixture()
        defer { fixture.cleanUp() }
        try await fixture.session().signIn(user: User(id: "u1", onboardingComplete: true), credentials: fixture.credentials(expiresIn: 3600))
        let bob = try Fixtures.keyFile("bob.key", in: fixture.temp)
        let state = try await fixture.session(key: bob).restore()
        guard case let .unavailable(reason) = state else { Issue.record("expected unavailable, got \(state)"); return }
        #expect(reason.reason == .wrongKey)
    }

    @Test func missingKeyIsLockedNotGuest() async throws {
        let fixture = try SessionFixture()
        defer { fixture.cleanUp() }
        try await fixture.session().signIn(user: User(id: "u1", onboardingComplete: true), credentials: fixture.credentials(expiresIn: 3600))
        let state = try await fixture.session(key: .some(nil)).restore()
        guard case let .unavailable(reason) = state else { Issue.record("expected unavailable, got \(state)"); return }
        #expect(reason.reason == .locked)
    }

    @Test func corruptVaultIsUnavailableAndUntouched() async throws {
        let fixture = try SessionFixture()
        defer { fixture.cleanUp() }
        try await fixture.session().signIn(user: User(id: "u1", onboardingComplete: true), credentials: fixture.credentials(expiresIn: 3600))
        let path = fixture.directory + "/secrets.vault"
        var bytes = try Array(Data(contentsOf: URL(fileURLWithPath: path)))
        bytes[300] ^= 0x40
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        chmod(path, 0o600)
        let state = try await fixture.session().restore()
        guard case let .unavailable(reason) = state else { Issue.record("expected unavailable, got \(state)"); return }
        #expect(reason.reason == .corrupt)
        #expect(try Array(Data(contentsOf: URL(fileURLWithPath: path))) == bytes)
    }

    @Test func corruptProfileIsUnavailableAndUntouched() async throws {
        let fixture = try SessionFixture()
        defer { fixture.cleanUp() }
        _ = try await fixture.session().restore()
        let path = fixture.directory + "/profile.json"
        let garbage = Data("{\"schemaVersion\": 1, \"anonymousId\": ".utf8)
        try garbage.write(to: URL(fileURLWithPath: path))
        chmod(path, 0o600)
        let state = try await fixture.session().restore()
        guard case let .unavailable(reason) = state else { Issue.record("expected unavailable, got \(state)"); return }
        #expect(reason.reason == .corrupt)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == garbage)
    }

    @Test func profileWithoutTokensIsExpiredNotGuest() async throws {
        let fixture = try SessionFixture()
        defer { fixture.cleanUp() }
        try await fixture.session().signIn(user: User(id: "u1", onboardingComplete: true), credentials: fixture.credentials(expiresIn: 3600))
        try fixture.store().wipe()
        let state = try await fixture.session().restore()
        guard case let .expired(user, hasRefreshToken, _) = state else { Issue.record("expected expired, got \(state)"); return }
        #expect(user.id == "u1")
        #expect(!hasRefreshToken)
    }

    @Test func tokensWithoutProfileAreShreddedOnRestore() async throws {
        // A crash after sign-out's profile write (the commit point) but before the vault was cleaned.
        let fixture = try SessionFixture()
        defer { fixture.cleanUp() }
        let session = try fixture.session()
        try await session.signIn(user: User(id: "u1", onboardingComplete: true), credentials: fixture.credentials(expiresIn: 3600))
        try ProfileStore(directory: fixture.directory).update { $0.user = nil }
        let state = try await fixture.session().restore()
        #expect(state.name == "guest")
        #expect(try fixture.store().list(owner: SessionNamespaces.user("u1")).isEmpty)
    }
}
