import Foundation
import Testing
import TestScheduling
@testable import CredentialVault
import VaultCrypto

/// Issue 26, bug 2: a process waiting for another's refresh outlasts it when told the refresher's
/// budget, instead of failing with `busy` at the session's lock timeout.
@Suite("Waiting for another process's refresh")
struct RefreshWaitTests {
    private static func sessions(lockTimeout: Duration) throws -> (SessionFixture, SessionManager, SessionManager) {
        let fixture = try SessionFixture()
        let clock = fixture.clock
        var configuration = SessionConfiguration(clock: { clock.now }, lockTimeout: lockTimeout)
        configuration.kdfPolicy = .testing
        configuration.rollbackMemory = .disabled
        let first = SessionManager(directory: fixture.directory, key: try fixture.key(), configuration: configuration)
        let second = SessionManager(directory: fixture.directory, key: try fixture.key(), configuration: configuration)
        return (fixture, first, second)
    }

    /// The first manager refreshes slowly (1.5 s, holding the session lock); the second starts meanwhile.
    private static func slowRefreshAndAWaiter(refreshLockWait: Duration?) async throws -> (Result<Credentials, any Error>, String) {
        let (fixture, first, second) = try sessions(lockTimeout: .milliseconds(300))
        defer { fixture.cleanUp() }
        try await first.signIn(user: User(id: "u1"), credentials: fixture.credentials(expiresIn: 10))
        let fresh = fixture.credentials(expiresIn: 3600, access: "access-2")
        let holding = Checkpoint()
        let refreshing = Task {
            try await first.validCredentials { _ in
                holding.reach()   // the session lock is held from here until the refresher returns
                try await Task.sleep(for: .milliseconds(1500))
                return fresh
            }
        }
        #expect(try await holding.wait(), "the first manager began its refresh")
        let waited: Result<Credentials, any Error>
        do {
            waited = .success(try await second.validCredentials(minTTL: .zero, refreshLockWait: refreshLockWait) { _ in
                throw VaultError(.io, "the waiter must not refresh itself")
            })
        } catch {
            waited = .failure(error)
        }
        _ = try await refreshing.value
        let access = (try? waited.get())?.accessToken.withUnsafeBytes { String(decoding: $0, as: UTF8.self) } ?? ""
        return (waited, access)
    }

    @Test func aWaiterGivenTheRefreshersBudgetGetsTheNewTokens() async throws {
        let (waited, access) = try await Self.slowRefreshAndAWaiter(refreshLockWait: .seconds(120))
        #expect((try? waited.get()) != nil)
        #expect(access == "access-2", "it found the tokens the other process saved")
    }

    @Test func withoutItTheWaiterIsBusyAtTheLockTimeout() async throws {
        let (waited, _) = try await Self.slowRefreshAndAWaiter(refreshLockWait: nil)
        guard case let .failure(error as VaultError) = waited else { Issue.record("expected busy, got \(waited)"); return }
        #expect(error.code == .busy)
    }
}
