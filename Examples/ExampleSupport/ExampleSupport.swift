// What every example shares: a throwaway app folder with a fresh key, a stand-in for the
// app's sign-in screen and token endpoint, and `expect`, which makes the example exit 1
// when the flow does not end as its article says (the tests run every example).
import CredentialVault
import VaultCrypto   // SecureRandom: the primitives are not re-exported by CredentialVault
import Foundation

/// A throwaway app folder: the vault directory and a random 32-byte key, removed at the end.
public struct ExampleApp: Sendable {
    /// The folder holding `secrets.vault` and `profile.json`.
    public let directory: String
    /// The key that opens the vault (an app would read its key file or ask for a passphrase).
    public let key: VaultKey
    private let root: String

    /// Creates the folder under `$TMPDIR`.
    public init(name: String) throws {
        let base = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        root = (base as NSString).appendingPathComponent("vault-example-\(name)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        directory = (root as NSString).appendingPathComponent("app")
        key = .keyMaterial(try SecureRandom.secureBytes(count: 32))
    }

    /// A session as the app creates it at every launch.
    public func launch(configuration: SessionConfiguration = SessionConfiguration()) -> SessionManager {
        SessionManager(directory: directory, key: key, configuration: configuration)
    }

    /// Removes the folder.
    public func remove() { try? FileManager.default.removeItem(atPath: root) }
}

/// Stands in for the authorization server: a token response as the app's sign-in screen gets it.
public enum FakeAuthorizationServer {
    /// Credentials valid for `lifetime` seconds, with a refresh token.
    public static func signIn(user: String, lifetime: TimeInterval = 3600) -> Credentials {
        let now = Date()
        return Credentials(accessToken: SecureBytes(copying: Array("access-\(user)-\(UUID().uuidString)".utf8)),
                           refreshToken: SecureBytes(copying: Array("refresh-\(user)".utf8)),
                           expiresAt: now.addingTimeInterval(lifetime), issuedAt: now)
    }

    /// A refresher that returns new credentials, counting its calls.
    public static func refresher(counter: RefreshCounter) -> TokenRefresher {
        { _ in
            counter.increment()
            let now = Date()
            return Credentials(accessToken: SecureBytes(copying: Array("access-refreshed-\(UUID().uuidString)".utf8)),
                               expiresAt: now.addingTimeInterval(3600), issuedAt: now)
        }
    }
}

/// Counts refresher calls.
public final class RefreshCounter: @unchecked Sendable {
    // Safe: `value` is only touched under `lock`.
    private let lock = NSLock()
    private var value = 0
    /// Creates a counter at zero.
    public init() {}
    /// Adds one.
    public func increment() { lock.lock(); value += 1; lock.unlock() }
    /// The count.
    public var count: Int { lock.lock(); defer { lock.unlock() }; return value }
}

/// Checks that the flow ended as its article says; prints each outcome.
public enum Outcome {
    nonisolated(unsafe) private static var failures = 0

    /// Prints "ok: what" or "FAILED: what" and remembers a failure.
    public static func expect(_ condition: Bool, _ what: String) {
        print(condition ? "ok: \(what)" : "FAILED: \(what)")
        if !condition { failures += 1 }
    }

    /// Removes the example's folder, then exits 0 when every expectation held, 1 otherwise.
    public static func finish(removing app: ExampleApp) -> Never {
        app.remove()
        print(failures == 0 ? "example passed" : "example failed: \(failures) expectation(s)")
        exit(failures == 0 ? 0 : 1)
    }
}
