import Foundation
import Testing
@testable import CredentialVault
import VaultCrypto

/// A mutable clock for session tests.
final class TestClock: @unchecked Sendable {
    // Safe: `current` is only touched under `lock`.
    private let lock = NSLock()
    private var current: Date

    init(_ start: Date = Date(timeIntervalSince1970: 1_800_000_000)) { current = start }

    var now: Date {
        lock.lock()
        defer { lock.unlock() }
        return current
    }

    func advance(by seconds: TimeInterval) {
        lock.lock()
        current = current.addingTimeInterval(seconds)
        lock.unlock()
    }
}

struct SessionFixture {
    let temp: TemporaryDirectory
    let clock: TestClock
    let keyPath: String
    var directory: String { temp.child("vault") }

    init() throws {
        temp = try TemporaryDirectory("vault-session")
        clock = TestClock()
        keyPath = try Fixtures.privateCopy("keys/alice.key", into: temp)
    }

    func key() throws -> VaultKey { try VaultKey.fromKeyFile(path: keyPath) }

    func session(key: VaultKey?? = nil) throws -> SessionManager {
        let clock = self.clock
        var configuration = SessionConfiguration(clock: { clock.now }, lockTimeout: .seconds(10))
        configuration.kdfPolicy = .testing
        configuration.rollbackMemory = .disabled
        return SessionManager(directory: directory, key: try key ?? self.key(), configuration: configuration)
    }

    func store() throws -> SecretStore {
        try SecretStore.open(in: directory, key: key(), options: .testing(now: clock.now))
    }

    func credentials(expiresIn seconds: TimeInterval?, refresh: Bool = true, access: String = "access-1") -> Credentials {
        Credentials(accessToken: secret(access), refreshToken: refresh ? secret("refresh-1") : nil,
                    idToken: nil, tokenType: "Bearer", scopes: ["openid", "profile"],
                    expiresAt: seconds.map { clock.now.addingTimeInterval($0) })
    }

    func cleanUp() { temp.cleanUp() }
}

/// Counts refresher calls across tasks.
final class CallCounter: @unchecked Sendable {
    // Safe: `value` is only touched under `lock`.
    private let lock = NSLock()
    private var value = 0
    func increment() { lock.lock(); value += 1; lock.unlock() }
    var count: Int { lock.lock(); defer { lock.unlock() }; return value }
}
