import FoundationEssentials

extension SessionManager {
    /// True when someone is signed in with an access token valid for `minTTL` (plus the
    /// leeway), without refreshing and without a full `restore()` (Auth0's `hasValid`).
    public func hasValidCredentials(minTTL: Duration = .zero) async -> Bool {
        guard let credentials = try? await backend.storedCredentials(of: self) else { return false }
        return isValid(credentials, minTTL: minTTL)
    }

    /// True when someone is signed in and a refresh token is stored (Auth0's `canRenew`).
    public var canRefresh: Bool {
        get async {
            ((try? await backend.storedCredentials(of: self))?.refreshToken) != nil
        }
    }

    /// Refreshes now, whatever the access token's expiry (Auth0's `renew`). Single-flight
    /// like `validCredentials`: callers in this process share the refresh, other processes
    /// wait on `session.lock`.
    /// - Throws: as `validCredentials(minTTL:refresher:)`.
    public func renew(refresher: @escaping TokenRefresher) async throws -> Credentials {
        try await backend.refreshNow(of: self, refreshLockWait: nil, joining: true, refresher: refresher)
    }

    /// Destroys everything this session keeps on the device: the vault file (credentials and
    /// every item, guest's and users') and the profile (user, anonymous id, settings). The
    /// lock files stay (removing a lock another process waits on would split it). The next
    /// `restore()` starts a new install with a new anonymous id.
    ///
    /// Copies of earlier vault files (backups, blocks the file system freed) still hold old
    /// data under the old keys; destroying the key file is the erase that holds.
    /// - Throws: `.busy`; file system errors.
    public func wipeAll() async throws {
        let device = try backend.device(for: .deviceData)
        let lock = try await sessionLock()
        defer { lock.release() }
        let directory = directory
        let timeout = configuration.lockTimeout
        _ = try await BlockingWork.run { try SecretStore.wipe(in: directory, lockTimeout: timeout) }
        try profiles.remove()
        device.forgetVault()
        anonymousID = nil
        logger.info("wiped the session")
        lastPublished = nil
        lastPublishedState = nil
        // Subscribers learn the new state; without any, nothing is written until the next restore().
        if !updateSubscribers.isEmpty { publish(await loadState(minTTL: .zero)) }
    }
}
