import Foundation
import Testing
import TestScheduling
@testable import CredentialVault
import VaultCrypto

/// Races between processes and within one, found in review; each once lost or misplaced data.
@Suite(.serialized) struct SessionRaceTests {
    /// A restore that reads the profile before another manager's sign-in commits must not
    /// shred that sign-in as an orphan.
    @Test func restoreNeverShredsASignInThatCommitsMeanwhile() async throws {
        let fixture = try SessionFixture()
        defer { fixture.cleanUp() }
        let clock = fixture.clock
        let passphrase = VaultKey.passphrase(secret("correct horse"))
        func manager() -> SessionManager {
            // standard KDF policy: opening takes one real scrypt (~0.7 s)
            var configuration = SessionConfiguration(clock: { clock.now }, lockTimeout: .seconds(10))
            configuration.rollbackMemory = .disabled
            return SessionManager(directory: fixture.directory, key: passphrase, configuration: configuration)
        }
        let a = manager()
        try await a.saveItem(NewEntry(name: "cart", secret: secret("c")))   // creates vault, A's store open
        let b = manager()
        let bTask = Task { await b.restore() }          // B reads profile (guest), then scrypt...
        try await Task.sleep(for: .milliseconds(150))
        try await a.signIn(user: User(id: "u1", onboardingComplete: true),
                           credentials: fixture.credentials(expiresIn: 3600))
        let bState = await bTask.value
        let after = await manager().restore()
        #expect(["guest", "signedIn"].contains(bState.name))
        #expect(after.name == "signedIn")
    }

    /// A refresh that waited for session.lock while another process switched users refreshes
    /// the user signed in now, and writes under that user.
    @Test func refreshWritesUnderTheUserSignedInWhenTheLockIsHeld() async throws {
        let fixture = try SessionFixture()
        defer { fixture.cleanUp() }
        let m1 = try fixture.session()
        try await m1.signIn(user: User(id: "u1", onboardingComplete: true), credentials: fixture.credentials(expiresIn: 10))
        let held = try FileLock.acquire(path: fixture.directory + "/session.lock", mode: .exclusive, timeout: .seconds(1))
        let clock = fixture.clock
        let refreshTask = Task {
            try await m1.validCredentials { token in
                Credentials(accessToken: secret("new-for-" + String(decoding: token.withUnsafeBytes { Array($0) }, as: UTF8.self)),
                            refreshToken: secret("rotated"), expiresAt: clock.now.addingTimeInterval(3600))
            }
        }
        try await Task.sleep(for: .milliseconds(300))   // m1 is now waiting for session.lock
        // Meanwhile "another process" signs u1 out and u2 in (done by hand, since we hold the lock).
        let profiles = ProfileStore(directory: fixture.directory)
        try profiles.update { $0.user = User(id: "u2", onboardingComplete: true) }
        let store = try fixture.store()
        try store.update { t in
            t.removeAll(owner: "user:u1")
            try CredentialRecords.write(Credentials(accessToken: secret("u2-old"), refreshToken: secret("u2-refresh"),
                                                    expiresAt: clock.now.addingTimeInterval(10)),
                                        owner: "user:u2", into: &t)
        }
        held.release()
        let got = try await refreshTask.value
        let fresh = try fixture.store()
        let u1 = try fresh.list(owner: "user:u1").map(\.name)
        let u2access = try fresh.secret(named: "session.access-token", owner: "user:u2")
        #expect(u1.isEmpty)
        #expect(got.accessToken == secret("new-for-u2-refresh"))
        #expect(u2access == secret("new-for-u2-refresh"))
    }

    /// Sign-out while this process's refresh awaits the network waits for it instead of timing out.
    @Test func signOutDuringAnInProcessRefreshWaitsForIt() async throws {
        let fixture = try SessionFixture()
        defer { fixture.cleanUp() }
        let clock = fixture.clock
        var configuration = SessionConfiguration(clock: { clock.now }, lockTimeout: .seconds(1))
        configuration.kdfPolicy = .testing
        configuration.rollbackMemory = .disabled
        let m = SessionManager(directory: fixture.directory, key: try fixture.key(), configuration: configuration)
        try await m.signIn(user: User(id: "u1", onboardingComplete: true), credentials: fixture.credentials(expiresIn: 10))
        let refreshing = Checkpoint(), refreshed = Checkpoint()
        let refresh = Task {
            try await m.validCredentials { _ in
                refreshing.reach()
                // Longer than the lock timeout: a sign-out that only waited for the lock would fail.
                try await Task.sleep(for: .seconds(2))
                refreshed.reach()
                return Credentials(accessToken: secret("a2"), expiresAt: clock.now.addingTimeInterval(3600))
            }
        }
        #expect(try await refreshing.wait(), "the refresh began")
        var outcome = "ok"
        do { try await m.signOut() } catch let e as VaultError { outcome = "\(e.code)" }
        #expect(refreshed.isReached, "the sign-out returned after the refresh, not before")
        _ = try? await refresh.value
        #expect(outcome == "ok")
        #expect(await m.restore().name == "guest")
    }
}
