import Foundation
import Testing
@testable import CredentialVault
import VaultCrypto

/// Issue 26, bug 3: a vault that holds a session with its profile missing is `unavailable(profileMissing)`,
/// never a silent guest that drops the tokens unrevoked; the recovery call hands them over first.
@Suite("A missing profile")
struct MissingProfileTests {
    private static func signedInThenProfileRemoved() async throws -> (SessionFixture, SessionManager) {
        let fixture = try SessionFixture()
        let session = try fixture.session()
        try await session.signIn(user: User(id: "u1", onboardingComplete: true), credentials: fixture.credentials(expiresIn: 3600))
        try await session.saveItem(string: "item", named: "note")
        try FileManager.default.removeItem(atPath: fixture.directory + "/profile.json")
        return (fixture, try fixture.session())
    }

    @Test func isUnavailableAndChangesNothing() async throws {
        let (fixture, session) = try await Self.signedInThenProfileRemoved()
        defer { fixture.cleanUp() }
        let state = await session.restore()
        guard case let .unavailable(why) = state else { Issue.record("expected unavailable, got \(state)"); return }
        #expect(why.reason == .profileMissing)
        #expect(why.error?.code == .corrupt)
        #expect(!FileManager.default.fileExists(atPath: fixture.directory + "/profile.json"), "no new profile, no new anonymous id")
        let owners = try fixture.store().snapshot { view in view.owners }
        #expect(owners.contains("user:u1"), "the session is still there")
        guard case .unavailable = await session.peek() else { Issue.record("peek must agree"); return }
    }

    @Test func theRecoveryRevokesThenRemovesAndStartsAGuest() async throws {
        let (fixture, session) = try await Self.signedInThenProfileRemoved()
        defer { fixture.cleanUp() }
        let revoked = RevocationLog()
        let dropped = try await session.recoverFromMissingProfile { userID, credentials in
            revoked.add(userID, credentials.accessToken.withUnsafeBytes { String(decoding: $0, as: UTF8.self) })
        }
        #expect(dropped == ["u1"])
        #expect(revoked.entries.count == 1)
        #expect(revoked.entries.first?.0 == "u1")
        #expect(revoked.entries.first?.1 == "access-1", "the dropped session's tokens were handed over before removal")
        guard case .guest = await session.restore() else { Issue.record("expected guest"); return }
        #expect(!(try fixture.store().snapshot { view in view.owners }).contains("user:u1"))
        #expect(try await session.recoverFromMissingProfile { _, _ in revoked.add("again", "") } == [], "nothing more to recover")
        #expect(revoked.entries.count == 1)
    }

    @Test func aVaultWithoutSessionsStillStartsAsAGuest() async throws {
        let fixture = try SessionFixture()
        defer { fixture.cleanUp() }
        let first = try fixture.session()
        _ = await first.restore()
        _ = try await first.enterGuestMode()
        try FileManager.default.removeItem(atPath: fixture.directory + "/profile.json")
        guard case .guest = await (try fixture.session()).restore() else { Issue.record("expected guest"); return }
    }
}

private final class RevocationLog: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: [(String, String)] = []
    func add(_ userID: String, _ token: String) { lock.lock(); stored.append((userID, token)); lock.unlock() }
    var entries: [(String, String)] { lock.lock(); defer { lock.unlock() }; return stored }
}
