import FoundationEssentials
import Logging
import VaultCrypto

/// The session: pairs the plain profile with the encrypted credentials and answers
/// "who is using the app right now?" at start-up, sign-in, refresh and sign-out.
///
/// Write order makes the profile the commit point: on sign-in the credentials (and the
/// migrated guest items) land in the vault first, in one atomic write, and the profile
/// names the user last; on sign-out the profile forgets the user first and the user's
/// entries are removed from the vault after (with a new data key; not a crypto-shred: older
/// copies of the vault still open with the same passphrase or key file). A journal in the profile (`pendingSignIn`) with a marker in the vault
/// lets `restore()` finish or roll back a sign-in that a crash interrupted.
public actor SessionManager {
    /// The directory holding `secrets.vault` and `profile.json` (empty for a fleet session).
    public let directory: String
    /// Where the session's records live: the vault file, the user's agent, or a fleet's store,
    /// chosen by the initialisers below and used through `SessionBackend` everywhere else.
    let backend: any SessionBackend
    let configuration: SessionConfiguration
    let profiles: ProfileStore
    private let sessionLockPath: String
    var refreshTask: Task<Credentials, any Error>?
    /// The per-audience refreshes running in this process, one per audience (SessionManager+Audiences.swift).
    var audienceTasks: [String: Task<Credentials, any Error>] = [:]
    package var logger: Logger { configuration.logger }
    /// Callers of `requireSignIn` waiting for a sign-in (SessionManager+RequireSignIn.swift).
    var signInWaiters: [UInt64: CheckedContinuation<User, any Error>] = [:]
    var nextWaiterID: UInt64 = 0
    /// Subscribers of `updates()` (SessionManager+Updates.swift).
    var updateSubscribers: [UInt64: AsyncStream<SessionState>.Continuation] = [:]
    var nextSubscriberID: UInt64 = 0
    /// What the last published state said, to publish changes another process made.
    var lastPublished: SessionFingerprint?
    /// The last state published, given first to every new `updates()` subscriber.
    var lastPublishedState: SessionState?
    /// Settings defaults the app registered (SessionManager+Settings.swift).
    var settingDefaults: [String: JSONValue] = [:]

    /// The anonymous id of this install, known after `restore()`.
    public internal(set) var anonymousID: String?

    /// What `restore()` found of a refresh a crash interrupted, if it found one
    /// (docs/SESSIONS.md, "A kill during refresh").
    public internal(set) var refreshRecovery: RefreshRecovery?

    /// Creates a session over `directory`.
    /// - Parameters:
    ///   - directory: The vault directory (created 0700 on first write).
    ///   - key: The vault key; nil leaves the vault locked (guests without a vault still work).
    ///   - configuration: Leeway, clock, timeouts, logger.
    public init(directory: String, key: VaultKey?, configuration: SessionConfiguration = SessionConfiguration()) {
        self.init(backend: VaultFileBackend(directory: directory, key: key, store: nil, options: configuration.storeOptions),
                  directory: directory, configuration: configuration)
    }

    /// Creates a session over a vault already opened, so that its key is derived once for
    /// everything a process does with both (a command line that reads the session and another
    /// entry of the same vault).
    /// - Parameters:
    ///   - store: The open vault; the profile is read from its directory.
    ///   - configuration: Leeway, clock, timeouts, logger (the store keeps the options it was opened with).
    public init(store: SecretStore, configuration: SessionConfiguration = SessionConfiguration()) {
        self.init(backend: VaultFileBackend(directory: store.directory, key: store.key, store: store, options: configuration.storeOptions),
                  directory: store.directory, configuration: configuration)
    }

    /// Creates a session over `directory` whose vault `agent` holds unlocked (`AgentBackend`).
    /// - Throws: `.notFound` when the directory does not exist.
    package init(directory: String, agent: VaultAgentClient, configuration: SessionConfiguration = SessionConfiguration()) throws {
        self.init(backend: try AgentBackend(directory: directory, agent: agent), directory: directory, configuration: configuration)
    }

    /// Creates a session over the fleet session `name` in `store` (PostgreSQL, shared by every replica: `FleetBackend`).
    /// - Parameters:
    ///   - store: The open store.
    ///   - name: The session's name (an owner name: `EntryValidation.checkOwner`).
    ///   - configuration: Leeway and clock; the store keeps its own timeouts.
    package init(fleet store: any FleetSessionStore, session name: String, configuration: SessionConfiguration = SessionConfiguration()) {
        self.init(backend: FleetBackend(store: store, name: name), directory: "", configuration: configuration)
    }

    /// The designated initializer, over the backend the initialisers above chose.
    private init(backend: any SessionBackend, directory: String, configuration: SessionConfiguration) {
        self.directory = directory
        self.backend = backend
        self.configuration = configuration
        self.profiles = ProfileStore(directory: directory, lockTimeout: configuration.lockTimeout)
        self.sessionLockPath = PathText.joining(directory, "session.lock")
    }

    // MARK: Internals

    func currentOwner() throws -> String {
        let profile = try profiles.load() ?? Profile()
        if let user = profile.user { return SessionNamespaces.user(user.id) }
        if let anonymous = profile.anonymousID ?? anonymousID { return SessionNamespaces.guest(anonymous) }
        let fresh = try profiles.update { profile -> String in
            if profile.anonymousID == nil { profile.anonymousID = try Self.newAnonymousID() }
            return profile.anonymousID ?? ""
        }
        anonymousID = fresh
        return SessionNamespaces.guest(fresh)
    }

    /// The device storage, for the flows that run only in a device session (a fleet's have their own).
    /// - Throws: `.unsupportedOperation` for a fleet session.
    var device: any DeviceSessionBackend {
        get throws { try backend.device(for: .items) }
    }

    /// Throws `.unsupportedOperation` when the backend has no `feature` (a fleet session).
    func requireDeviceSession(_ feature: DeviceFeature) throws {
        _ = try backend.device(for: feature)
    }

    /// The credentials `owner` has stored, or nil (also when there is no vault).
    func readCredentials(owner: String) throws -> Credentials? {
        try device.credentials(owner: owner)
    }

    /// The secret of the reserved entry `name` of `owner` (a journal's marker), or nil.
    func readMarker(_ name: String, owner: String) throws -> SecureBytes? {
        try device.records(named: [name], owner: owner).first?.secret
    }

    /// Saves refreshed credentials with the refresh journal's marker in one write. `credentials`
    /// keeps the refresh and id tokens it replaces (the caller merged them), so nothing is removed.
    /// `extra` entries (a per-audience token) land in the same write.
    func saveRefreshed(_ credentials: Credentials, owner: String, marker: SecureBytes, extra: [NewEntry] = []) throws {
        let markerEntry = NewEntry(name: SessionNamespaces.Reserved.refreshMarker, owner: owner, secret: marker, transferable: false)
        try device.replace(try CredentialRecords.entries(for: credentials, owner: owner) + [markerEntry] + extra)
    }

    /// Takes `session.lock`. A refresh in flight in this process holds it, so other
    /// transitions wait for that refresh first instead of timing out on our own lock; the
    /// blocking `flock` wait runs off the actor so the refresh can finish meanwhile.
    func sessionLock(waitingForRefresh: Bool = true, timeout longer: Duration? = nil) async throws -> FileLock {
        if waitingForRefresh, let refreshTask { _ = try? await refreshTask.value }
        try SecureFileSystem.ensurePrivateDirectory(directory, create: true)
        let path = sessionLockPath
        let timeout = max(configuration.lockTimeout, longer ?? .zero)
        return try await BlockingWork.run { try FileLock.acquire(path: path, mode: .exclusive, timeout: timeout) }
    }

    static func newAnonymousID() throws -> String {
        var bytes = try SecureRandom.bytes(count: 16)
        bytes[6] = (bytes[6] & 0x0F) | 0x40   // UUID version 4
        bytes[8] = (bytes[8] & 0x3F) | 0x80   // RFC 4122 variant
        let hex = bytes.hexString
        let parts = [hex.prefix(8), hex.dropFirst(8).prefix(4), hex.dropFirst(12).prefix(4), hex.dropFirst(16).prefix(4), hex.dropFirst(20)]
        return parts.joined(separator: "-")
    }

    static func randomHex(_ count: Int) throws -> String {
        try SecureRandom.bytes(count: count).hexString
    }

    nonisolated static func seconds(_ duration: Duration) -> TimeInterval {
        let (seconds, attoseconds) = duration.components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }
}
