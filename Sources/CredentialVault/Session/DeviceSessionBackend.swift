import FoundationEssentials
import VaultCrypto

/// A backend that keeps a session on a device: `profile.json` and `session.lock` in `directory`,
/// the journals of sign-in and refresh, the guest, and the session's records in a vault, read in
/// one snapshot and written in one transaction (synchronously: the session's actor holds no
/// suspension point between a read and the write it decides). The vault file (`VaultFileBackend`)
/// and the user's agent (`AgentBackend`) are such backends; the flows over them are
/// `SessionManager`'s, written once (the defaults below).
protocol DeviceSessionBackend: SessionBackend {
    /// The vault's directory, with `profile.json` and `session.lock`.
    var directory: String { get }

    /// Makes the synchronous reads below cheap: the vault file's key derivation (scrypt for a
    /// passphrase) runs off the cooperative pool. Nothing to do through the agent.
    func prepare() async throws
    /// Throws `SessionUnavailable` (`.locked`) when a vault exists that this backend cannot read (no key).
    func checkReadable() throws
    /// The entries `names` of `owner` that exist, read in one snapshot (none when there is no vault).
    func records(named names: [String], owner: String) throws -> [VaultEntry]
    /// Writes `entries` in one transaction, each replacing the entry of the same name and owner.
    /// - Throws: `SessionUnavailable` (`.locked`) when there is no vault to write to.
    func replace(_ entries: [NewEntry]) throws
    /// Removes the entries `names` of `owner` that exist, keeping the data key.
    func remove(names: [String], owner: String) throws
    /// The vault's part of a sign-out: the credentials of `owner` always, and its items unless
    /// `localData` keeps them; all of `replacedGuest` (an owner); a new data key.
    /// - Returns: The credentials removed (for revocation), or nil.
    func endSession(owner: String?, localData: LocalDataPolicy, replacedGuest: String?) throws -> Credentials?
    /// The user namespaces holding session credentials (`SessionManager.sessionOwners(in:)`).
    func sessionOwners() async throws -> [String]
    /// The whole vault, for items, guest mode and the migration of guest items at sign-in.
    /// - Throws: `SessionUnavailable` (`.locked`) when it exists (or is to be created) and this
    ///   process cannot open it: without a key, or when the agent holds it.
    func vault(create: Bool) throws -> SecretStore?
    /// `vault(create:)`, with the key derivation off the cooperative pool.
    func vaultOffPool(create: Bool) async throws -> SecretStore?
    /// The vault for the session's housekeeping (pending revocations, what a crashed sign-out
    /// left): nil when another process holds it (the agent), where it waits for a process that
    /// opens the vault itself.
    func housekeepingVault() async throws -> SecretStore?
    /// Forgets the vault opened, after `SessionManager.wipeAll()` destroyed it.
    func forgetVault()
}

extension DeviceSessionBackend {
    func device(for feature: DeviceFeature) throws -> any DeviceSessionBackend { self }

    /// The credentials `owner` has stored, or nil.
    func credentials(owner: String) throws -> Credentials? {
        CredentialRecords.credentials(from: try records(named: CredentialRecords.recordNames, owner: owner))
    }

    func restoredState(of session: isolated SessionManager, minTTL: Duration, refreshLockWait: Duration?) async -> SessionState {
        await session.restoredDeviceState(minTTL: minTTL, refreshLockWait: refreshLockWait)
    }

    func peekedState(of session: isolated SessionManager, minTTL: Duration) async -> SessionState {
        await session.peekedDeviceState(minTTL: minTTL)
    }

    func storedCredentials(of session: isolated SessionManager) async throws -> Credentials {
        try session.currentCredentials().1
    }

    func validCredentials(of session: isolated SessionManager, minTTL: Duration, refreshLockWait: Duration?,
                          refresher: @escaping TokenRefresher) async throws -> Credentials {
        try await session.validDeviceCredentials(minTTL: minTTL, refreshLockWait: refreshLockWait, refresher: refresher)
    }

    func refreshNow(of session: isolated SessionManager, refreshLockWait: Duration?, joining: Bool,
                    refresher: @escaping TokenRefresher) async throws -> Credentials {
        if joining { return try await session.sharedRefresh(minTTL: .zero, force: true, refresher: refresher) }
        return try await session.refreshDeviceNow(refreshLockWait: refreshLockWait, refresher: refresher)
    }

    func signIn(of session: isolated SessionManager, user: User, credentials: Credentials, policy: MergePolicy) async throws -> MigrationReport {
        try await session.signInOnDevice(user: user, credentials: credentials, policy: policy)
    }

    func signOut(of session: isolated SessionManager, localData: LocalDataPolicy?, newAnonymousID: Bool,
                 resetSettings: Bool) async throws -> Credentials? {
        try await session.signOutOnDevice(localData: localData, newAnonymousID: newAnonymousID, resetSettings: resetSettings)
    }

    func clientCredentials(of session: isolated SessionManager, clientID: String, minTTL: Duration,
                           fetch: @escaping @Sendable () async throws -> Credentials) async throws -> Credentials {
        try await session.deviceClientCredentials(clientID: clientID, minTTL: minTTL, fetch: fetch)
    }
}
