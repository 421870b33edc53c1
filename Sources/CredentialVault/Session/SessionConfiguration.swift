import FoundationEssentials
import Logging
import VaultCrypto

/// Settings of a `SessionManager`.
public struct SessionConfiguration: Sendable {
    /// Tokens expiring within this margin count as expired (clock skew, request latency).
    /// Default 60 s, capped at half a token's lifetime when its issue time is known, so a
    /// short-lived token is never expired at the moment it arrives.
    public var leeway: Duration
    /// What sign-out does with the user's own items when the caller does not say, and what
    /// happens to them when the server ends the session (`invalid_grant`). Default `.wipe`.
    public var localDataOnSignOut: LocalDataPolicy = .wipe
    /// The clock. Inject a fixed one in tests.
    public var clock: @Sendable () -> Date
    /// How long to wait for another process's lock.
    public var lockTimeout: Duration
    /// Where transitions are logged. Never receives secrets.
    public var logger: Logger
    /// Where vault generations are remembered across runs (see `SecretStore.Options.rollbackMemory`).
    public var rollbackMemory: RollbackMemory = .standard
    /// Accept a vault older than the remembered generation (see `SecretStore.Options.acceptRollback`).
    public var acceptRollback = false
    /// Open a vault whose scrypt cost was raised (see `SecretStore.Options.acceptsRaisedKDFCost`).
    public var acceptsRaisedKDFCost = false
    /// The KDF policy for passphrase vaults; `package` so only this package's tests change it.
    package var kdfPolicy: KDFPolicy = .standard

    /// Defaults: 60 s leeway, the system clock, 10 s lock timeout, no logging.
    public init(leeway: Duration = .seconds(60), clock: @escaping @Sendable () -> Date = { Date() },
                lockTimeout: Duration = .seconds(10),
                logger: Logger = Logger(label: "vault.session", factory: { _ in SwiftLogNoOpLogHandler() })) {
        self.leeway = leeway
        self.clock = clock
        self.lockTimeout = lockTimeout
        self.logger = logger
    }

    var storeOptions: SecretStore.Options {
        var options = SecretStore.Options(lockTimeout: lockTimeout, clock: clock, logger: logger)
        options.kdfPolicy = kdfPolicy
        options.rollbackMemory = rollbackMemory
        options.acceptRollback = acceptRollback
        options.acceptsRaisedKDFCost = acceptsRaisedKDFCost
        return options
    }
}

/// Refresh failures an app's refresher reports. Any other error counts as transient.
public enum RefreshFailure: Error, Sendable {
    /// The server rejected the refresh token for good (OAuth `invalid_grant`): the session ends.
    case invalidGrant(description: String?)
}

/// Turns a refresh token into new credentials, usually by calling the token endpoint.
public typealias TokenRefresher = @Sendable (_ refreshToken: SecureBytes) async throws -> Credentials
