import Foundation
import Testing
@testable import CredentialVault
import VaultCrypto

/// `SessionManager.peek()`: the state `restore()` would give, read without writing anything.
@Suite struct SessionPeekTests {
    @Test func peekOnAMissingDirectoryIsGuestAndCreatesNothing() async throws {
        let fixture = try SessionFixture()
        defer { fixture.cleanUp() }
        let session = try fixture.session()
        let state = await session.peek()
        guard case let .guest(id) = state else { Issue.record("expected guest, got \(state)"); return }
        #expect(id.isEmpty)
        #expect(await session.anonymousID == nil)
        #expect(!FileManager.default.fileExists(atPath: fixture.directory))
    }

    @Test func peekReportsAnInterruptedSignInAsItWouldSettleButLeavesTheJournal() async throws {
        let fixture = try SessionFixture()
        defer { fixture.cleanUp() }
        let anonymousID = try await SessionRecoveryTests.prepareGuest(fixture, items: 2)
        let journal = PendingSignIn(journalID: "j3", userID: "u1", anonymousID: anonymousID,
                                    user: User(id: "u1", onboardingComplete: true), startedAt: fixture.clock.now)
        try ProfileStore(directory: fixture.directory).update { $0.pendingSignIn = journal }
        // Journal only: it would roll back, so peek says guest.
        guard case let .guest(id) = try await fixture.session().peek() else { Issue.record("expected guest"); return }
        #expect(id == anonymousID)
        try fixture.store().update { transaction in
            _ = try SessionManager.migrate(into: &transaction, journal: journal, credentials: fixture.credentials(expiresIn: 3600),
                                           policy: .keepAccount, fromGuest: true)
        }
        let vaultBefore = try Data(contentsOf: URL(fileURLWithPath: fixture.directory + "/secrets.vault"))
        let profileBefore = try Data(contentsOf: URL(fileURLWithPath: fixture.directory + "/profile.json"))
        // The vault write landed: it would roll forward, so peek says signed in ...
        let state = try await fixture.session().peek()
        guard case let .signedIn(user, _) = state else { Issue.record("expected signedIn, got \(state)"); return }
        #expect(user.id == "u1")
        // ... and the journal, the marker and both files are untouched.
        #expect(try ProfileStore(directory: fixture.directory).load()?.pendingSignIn == journal)
        #expect(try Data(contentsOf: URL(fileURLWithPath: fixture.directory + "/secrets.vault")) == vaultBefore)
        #expect(try Data(contentsOf: URL(fileURLWithPath: fixture.directory + "/profile.json")) == profileBefore)
    }

    @Test func peekWithoutAKeyOnAnExistingVaultIsLocked() async throws {
        let fixture = try SessionFixture()
        defer { fixture.cleanUp() }
        _ = try await SessionRecoveryTests.prepareGuest(fixture, items: 1)
        let state = try await fixture.session(key: .some(nil)).peek()
        guard case let .unavailable(why) = state else { Issue.record("expected unavailable, got \(state)"); return }
        #expect(why.reason == .locked)
    }
}
