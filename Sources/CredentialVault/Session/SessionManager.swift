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
    let key: VaultKey?
    /// The fleet session this manager works on, for a session shared by a fleet (PostgreSQL);
    /// nil for the vault file's session (SessionManager+Fleet.swift).
    let fleet: FleetBinding?
    /// The user's `vault agent`, when it holds this vault unlocked for the session
    /// (SessionManager+Agent.swift); nil when the session opens the vault itself.
    let agent: AgentBinding?
    let configuration: SessionConfiguration
    let profiles: ProfileStore
    private let sessionLockPath: String
    var store: SecretStore?
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
    public private(set) var refreshRecovery: RefreshRecovery?

    /// Creates a session over `directory`.
    /// - Parameters:
    ///   - directory: The vault directory (created 0700 on first write).
    ///   - key: The vault key; nil leaves the vault locked (guests without a vault still work).
    ///   - configuration: Leeway, clock, timeouts, logger.
    public init(directory: String, key: VaultKey?, configuration: SessionConfiguration = SessionConfiguration()) {
        self.init(directory: directory, key: key, store: nil, fleet: nil, agent: nil, configuration: configuration)
    }

    /// Creates a session over a vault already opened, so that its key is derived once for
    /// everything a process does with both (a command line that reads the session and another
    /// entry of the same vault).
    /// - Parameters:
    ///   - store: The open vault; the profile is read from its directory.
    ///   - configuration: Leeway, clock, timeouts, logger (the store keeps the options it was opened with).
    public init(store: SecretStore, configuration: SessionConfiguration = SessionConfiguration()) {
        self.init(directory: store.directory, key: store.key, store: store, fleet: nil, agent: nil, configuration: configuration)
    }

    /// The designated initializer: a vault file's session (with its store when already open, or
    /// through the user's agent), or a fleet session (SessionManager+Fleet.swift).
    init(directory: String, key: VaultKey?, store: SecretStore?, fleet: FleetBinding?, agent: AgentBinding?,
         configuration: SessionConfiguration) {
        self.directory = directory
        self.key = key
        self.store = store
        self.fleet = fleet
        self.agent = agent
        self.configuration = configuration
        self.profiles = ProfileStore(directory: directory, lockTimeout: configuration.lockTimeout)
        self.sessionLockPath = PathText.joining(directory, "session.lock")
    }

    // MARK: Start-up

    /// Rebuilds the session from both stores, finishing or rolling back an interrupted
    /// sign-in and removing credentials a crashed sign-out left behind.
    /// - Parameter minTTL: How long the access token must stay valid (on top of the leeway)
    ///   to count as signed in.
    /// - Returns: The session state. Never throws: failures are `.unavailable` with a reason.
    public func restore(minTTL: Duration = .zero) async -> SessionState {
        await restore(minTTL: minTTL, refreshLockWait: nil)
    }

    /// `restore(minTTL:)` where a refresh in flight in another process (its journal on disk) is
    /// waited for up to `refreshLockWait` (at least `lockTimeout`): the refresher's whole budget,
    /// as every wait on a refresh in flight (`validCredentials(minTTL:refreshLockWait:refresher:)`).
    package func restore(minTTL: Duration, refreshLockWait: Duration?) async -> SessionState {
        let state = await loadState(minTTL: minTTL, refreshLockWait: refreshLockWait)
        publish(state)
        return state
    }

    func loadState(minTTL: Duration, refreshLockWait: Duration? = nil) async -> SessionState {
        if let fleet { return await fleetState(fleet, minTTL: minTTL) }
        do {
            // Read first; only the very first launch writes (the new anonymous id).
            let loaded = try profiles.load()
            if loaded == nil { try await refuseSessionsWithoutProfile() }
            var profile = loaded ?? Profile()
            if profile.anonymousID == nil {
                profile = try profiles.update { profile -> Profile in
                    if profile.anonymousID == nil { profile.anonymousID = try Self.newAnonymousID() }
                    return profile
                }
            }
            anonymousID = profile.anonymousID
            if profile.pendingSignIn != nil {
                try await recoverInterruptedSignIn()
                profile = try profiles.load() ?? profile
            }
            if let journal = profile.refreshInFlight, !journal.interrupted {
                // A refresh in flight (here or in another process) holds the lock: waited for as long as it may take.
                let lock = try await sessionLock(timeout: refreshLockWait)
                refreshRecovery = try settleRefresh()
                lock.release()
                profile = try profiles.load() ?? profile
            } else if let journal = profile.refreshInFlight {
                refreshRecovery = .interrupted(startedAt: journal.startedAt)
            }
            guard let user = profile.user else {
                try await removeOrphanedCredentials(profile: profile)
                return .guest(anonymousID: profile.anonymousID ?? "")
            }
            return try await state(of: user, minTTL: minTTL)
        } catch {
            return unavailable(error)
        }
    }

    /// The state `restore()` would return, found without changing anything on disk: for
    /// read-only callers such as a status display. It never creates the directory, the profile,
    /// an anonymous id or a lock file; an interrupted sign-in is reported as it would be
    /// settled (signed in when its vault write landed, else as before) but not settled, and
    /// credentials a crashed sign-out left behind are ignored, not removed. Nothing is
    /// published to `stateUpdates`.
    /// - Parameter minTTL: As for `restore(minTTL:)`.
    /// - Returns: The session state; `.guest` with an empty anonymous id when there is no
    ///   profile yet (`anonymousID` stays nil). Never throws.
    public func peek(minTTL: Duration = .zero) async -> SessionState {
        if let fleet { return await fleetState(fleet, minTTL: minTTL) }
        do {
            let loaded = try profiles.load()
            anonymousID = loaded?.anonymousID
            // As restore(): an existing vault without a key is locked, whoever is signed in.
            if key == nil, agent == nil, SecretStore.exists(in: directory) { throw SessionUnavailable(reason: .locked, error: nil) }
            guard var profile = loaded else {
                try await refuseSessionsWithoutProfile()
                return .guest(anonymousID: "")
            }
            if let journal = profile.pendingSignIn, try await signInLandedOffPool(journal) {
                profile.user = journal.user
            }
            guard let user = profile.user else { return .guest(anonymousID: profile.anonymousID ?? "") }
            return try await state(of: user, minTTL: minTTL)
        } catch {
            return unavailable(error)
        }
    }

    /// Throws `profileMissing` when the vault holds a user's session although there is no profile.
    private func refuseSessionsWithoutProfile() async throws {
        let users: [String]
        if let agent {
            users = Self.sessionOwners(in: try agent.client.list(directory: agent.directory))
        } else {
            guard let store = try await openStoreOffPool(create: false) else { return }
            users = try store.snapshot { Self.sessionOwners(in: $0.list()) }
        }
        guard !users.isEmpty else { return }
        throw SessionUnavailable(reason: .profileMissing, error: VaultError(
            .corrupt, "the vault holds the session of \(users.count == 1 ? "a signed-in user" : "\(users.count) users") but the profile "
                + "(profile.json) that names them is missing; nothing was changed",
            path: directory, fix: "restore profile.json from a backup, or end the session on purpose (it is revoked then)",
            topic: .profileMissing))
    }

    /// The user namespaces that hold session credentials, among `entries`.
    static func sessionOwners(in entries: [EntryMetadata]) -> [String] {
        var owners: [String] = []
        for entry in entries where entry.owner.hasPrefix("user:") && entry.name.hasPrefix(SessionNamespaces.Reserved.prefix) {
            if !owners.contains(where: { $0.sameBytes(as: entry.owner) }) { owners.append(entry.owner) }
        }
        return owners
    }

    /// Ends the sessions of a vault whose profile is missing (`SessionUnavailable.Reason.profileMissing`):
    /// each user's credentials are first handed to `revoke` (revoke them at the authorization server
    /// there; its failures are the app's to report), then removed with the user's items under a new
    /// data key, and a new profile starts the app as a guest with a new anonymous id.
    /// - Parameter revoke: called once per dropped session, before anything is removed.
    /// - Returns: The ids of the users whose sessions were ended (empty when the profile exists or
    ///   the vault holds no session).
    /// - Throws: the store's errors (nothing is removed then).
    public func recoverFromMissingProfile(revoke: (_ userID: String, _ credentials: Credentials) async -> Void) async throws -> [String] {
        try requireDeviceSession("profile recovery")
        let lock = try await sessionLock()
        defer { lock.release() }
        guard try profiles.load() == nil, let store = try await openStoreOffPool(create: false) else { return [] }
        let sessions = try store.snapshot { view in
            try Self.sessionOwners(in: view.list()).map { owner in (owner, try CredentialRecords.read(owner: owner, from: view)) }
        }
        guard !sessions.isEmpty else { return [] }
        for (owner, credentials) in sessions {
            if let credentials { await revoke(String(owner.dropFirst("user:".count)), credentials) }
        }
        try store.update { transaction in
            for (owner, _) in sessions { Self.removeUserEntries(owner: owner, localData: .wipe, in: &transaction) }
            transaction.rotateDataKey()
        }
        let profile = try profiles.update { profile -> Profile in
            if profile.anonymousID == nil { profile.anonymousID = try Self.newAnonymousID() }
            return profile
        }
        anonymousID = profile.anonymousID
        logger.notice("ended sessions whose profile was missing", metadata: ["sessions": "\(sessions.count)"])
        publish(.guest(anonymousID: profile.anonymousID ?? ""))
        return sessions.map { String($0.0.dropFirst("user:".count)) }
    }

    /// The state of a profile that names `user`: from the user's credentials in the vault.
    private func state(of user: User, minTTL: Duration) async throws -> SessionState {
        try await openVaultOffPool()
        guard let credentials = try readCredentials(owner: SessionNamespaces.user(user.id)) else { return .expired(user, hasRefreshToken: false, expiresAt: nil) }
        guard isValid(credentials, minTTL: minTTL) else {
            return .expired(user, hasRefreshToken: credentials.refreshToken != nil, expiresAt: credentials.expiresAt)
        }
        return user.onboardingComplete ? .signedIn(user, credentials) : .needsOnboarding(user, credentials)
    }

    /// `.unavailable` with the reason for `error`.
    func unavailable(_ error: any Error) -> SessionState {
        switch error {
        case let unavailable as SessionUnavailable:
            logger.warning("session unavailable", metadata: ["reason": "\(unavailable.reason.rawValue)"])
            return .unavailable(unavailable)
        case let error as VaultError:
            logger.warning("session unavailable", metadata: ["error": "\(error.code)"])
            return .unavailable(SessionUnavailable(error))
        default:
            return .unavailable(SessionUnavailable(reason: .unreadable, error: VaultError(.io, "\(error)")))
        }
    }

    // MARK: Sign-in and sign-out

    /// Signs `user` in with `credentials`. From guest, the guest's transferable items move
    /// to the account in the same atomic vault write as the credentials.
    /// - Parameters:
    ///   - user: The account (its id names the vault namespace).
    ///   - credentials: From the token response.
    ///   - policy: How to resolve items present in both the guest and the account.
    /// - Returns: What moved, conflicted and stayed.
    /// - Throws: `.alreadyExists` when another user is signed in; `.mergeConflict` under `.fail`;
    ///   `SessionUnavailable` when there is no key; store errors. Nothing changes on failure.
    @discardableResult
    public func signIn(user: User, credentials: Credentials, policy: MergePolicy = .keepAccount) async throws -> MigrationReport {
        if let fleet { return try await fleetSignIn(fleet, user: user, credentials: credentials) }
        let lock = try await sessionLock()
        defer { lock.release() }
        let current = try profiles.load() ?? Profile()
        if let signedIn = current.user, signedIn.id != user.id {
            throw VaultError(.alreadyExists, "already signed in as '\(TerminalText.escaped(signedIn.id))'", fix: "sign out first", topic: .alreadySignedIn)
        }
        let anonymous = try current.anonymousID ?? Self.newAnonymousID()
        var user = user
        // A returning user who finished onboarding on this device does not see it again.
        if current.returningUsers[user.id]?.onboardingComplete == true { user.onboardingComplete = true }
        let journal = PendingSignIn(journalID: try Self.randomHex(16), userID: user.id, anonymousID: anonymous, user: user,
                                    startedAt: configuration.clock())
        try profiles.update { profile in
            profile.anonymousID = anonymous
            profile.pendingSignIn = journal
        }
        let report: MigrationReport
        do {
            guard let store = try await openStoreOffPool(create: true) else { throw SessionUnavailable(reason: .locked, error: nil) }
            report = try store.update { transaction in
                try Self.migrate(into: &transaction, journal: journal, credentials: credentials, policy: policy,
                                 fromGuest: current.user == nil)
            }
        } catch {
            // The vault write may have landed even though it reported an error (a failed
            // directory fsync comes after the rename): settle it by the marker, as restore() does.
            try? settle(journal)
            throw error
        }
        try commit(journal)
        anonymousID = anonymous
        logger.info("signed in", metadata: ["user": "\(user.id)", "moved": "\(report.moved.count)",
                                            "conflicts": "\(report.conflicts.count)", "stayed": "\(report.stayed.count)"])
        resumeSignInWaiters(with: .success(user))
        publish(user.onboardingComplete ? .signedIn(user, credentials) : .needsOnboarding(user, credentials))
        return report
    }

    /// Signs the user out: the profile forgets the user first (the commit point), then the
    /// user's credentials are removed from the vault and the data key is replaced, so the
    /// removed entries cannot be decrypted with the key material held afterwards (copies of
    /// older vault files on disk or in backups still hold them under the old data key).
    /// - Parameters:
    ///   - localData: What happens to the user's own items: `.wipe` removes them with the
    ///     credentials; `.keep` leaves them on the device for the same user's next sign-in.
    ///     Nil uses `SessionConfiguration.localDataOnSignOut` (default `.wipe`).
    ///   - newAnonymousID: Give the guest a new anonymous id instead of the old one; the old
    ///     guest's items are then removed (a new guest is a new person on this device).
    ///   - resetSettings: Also reset the settings to their registered defaults (as `enterGuestMode`
    ///     does), in the same sign-out; the guest's items stay.
    /// - Returns: The credentials that were removed (to revoke them at the server), if any.
    /// - Throws: store errors; `.busy`.
    @discardableResult
    public func signOut(localData: LocalDataPolicy? = nil, newAnonymousID: Bool = false, resetSettings: Bool = false) async throws -> Credentials? {
        if let fleet { return try await fleet.store.removeCredentials(session: fleet.name) }
        let lock = try await sessionLock()
        defer { lock.release() }
        let removed = try signOutLocked(newAnonymousID: newAnonymousID, expectedUserID: nil,
                                        localData: localData ?? configuration.localDataOnSignOut)
        if resetSettings { try profiles.update { profile in profile.settings = [:] } }
        publish(.guest(anonymousID: anonymousID ?? ""))
        return removed
    }

    /// The "skip" button: become a guest with default settings and no guest items.
    /// Signs out first when someone is signed in.
    /// - Parameter resetAnonymousID: Start over with a new anonymous id.
    /// - Returns: The anonymous id.
    public func enterGuestMode(resetAnonymousID: Bool = false) async throws -> String {
        try await enterGuestModeSigningOut(resetAnonymousID: resetAnonymousID).anonymousID
    }

    /// `enterGuestMode`, returning also the credentials of the user it signed out (to revoke them:
    /// `enterGuestMode(resetAnonymousID:revokingWith:)` in CredentialVaultOAuth).
    package func enterGuestModeSigningOut(resetAnonymousID: Bool) async throws -> (anonymousID: String, removed: Credentials?) {
        try requireDeviceSession("guest mode")
        let lock = try await sessionLock()
        defer { lock.release() }
        var removed: Credentials?
        if try profiles.load()?.user != nil {
            removed = try signOutLocked(newAnonymousID: false, expectedUserID: nil, localData: configuration.localDataOnSignOut)
        }
        let (old, new) = try profiles.update { profile -> (String?, String) in
            let old = profile.anonymousID
            if resetAnonymousID || profile.anonymousID == nil { profile.anonymousID = try Self.newAnonymousID() }
            profile.settings = [:]   // reads fall back to the registered defaults
            return (old, profile.anonymousID ?? "")
        }
        if let store = try openStore(create: false) {
            try store.update { transaction in
                for owner in Set([old, new].compactMap { $0 }) { transaction.removeAll(owner: SessionNamespaces.guest(owner)) }
            }
        }
        anonymousID = new
        logger.info("entered guest mode")
        publish(.guest(anonymousID: new))
        return (new, removed)
    }

    /// Marks onboarding finished for the signed-in user; remembered for that user across
    /// sign-out, so the same user signing in again on this device skips it.
    /// - Throws: `.notSignedIn`; profile store errors.
    public func completeOnboarding() async throws {
        try requireDeviceSession("onboarding")
        try profiles.update { profile in
            guard profile.user != nil else { throw VaultError(.notSignedIn, "nobody is signed in") }
            profile.user?.onboardingComplete = true
        }
        publish(await loadState(minTTL: .zero))
    }

    // MARK: Fresh credentials

    /// Credentials valid for at least `minTTL` (plus the leeway), refreshing when needed.
    ///
    /// Refresh is single-flight: concurrent callers in this process share one refresh, and
    /// other processes wait on `session.lock` and then find the new tokens already saved.
    /// The new tokens are saved atomically before anyone gets them; a response without a
    /// refresh token keeps the old one.
    /// - Throws: `.notSignedIn`; `.sessionExpired` when there is no refresh token or the server
    ///   answered `invalid_grant` (the session then ends and the app is a guest again); the
    ///   refresher's own error for transient failures (the session is kept).
    ///   `.minTTLTooLarge` when even a just-refreshed token does not live `minTTL` (asking
    ///   for more than the server grants would refresh on every call). `.busy` when another
    ///   process held the session lock longer than `SessionConfiguration.lockTimeout` (a refresh
    ///   there that outlasted it; transient, the session is kept); `SessionUnavailable` and the
    ///   store's errors (`.wrongKey`, `.corrupt`, …) when the vault cannot be read.
    public func validCredentials(minTTL: Duration = .zero, refresher: @escaping TokenRefresher) async throws -> Credentials {
        try await validCredentials(minTTL: minTTL, refreshLockWait: nil, refresher: refresher)
    }

    /// `validCredentials(minTTL:refresher:)` where a process waiting for another's refresh waits up to
    /// `refreshLockWait` (at least `lockTimeout`): the refresher's whole budget, so that waiters
    /// outlast the refresh they wait for (`validCredentials(client:)` derives it from the client).
    package func validCredentials(minTTL: Duration, refreshLockWait: Duration?, refresher: @escaping TokenRefresher) async throws -> Credentials {
        if let fleet { return try await fleetValidCredentials(fleet, minTTL: minTTL, refresher: refresher) }
        if let refreshTask {
            let shared = try await refreshTask.value
            if isValid(shared, minTTL: minTTL) { return shared }
        }
        let (_, credentials) = try currentCredentials()
        if isValid(credentials, minTTL: minTTL) { return credentials }
        return try await sharedRefresh(minTTL: minTTL, force: false, lockWait: refreshLockWait, refresher: refresher)
    }

    /// Runs one refresh for every caller in this process (and, through `session.lock`, in
    /// other processes), then checks that what came back satisfies `minTTL`.
    func sharedRefresh(minTTL: Duration, force: Bool, lockWait: Duration? = nil, refresher: @escaping TokenRefresher) async throws -> Credentials {
        let fresh: Credentials
        if let refreshTask {
            fresh = try await refreshTask.value
        } else {
            let task = Task { try await self.refresh(minTTL: minTTL, refresher: refresher, force: force, lockWait: lockWait) }
            refreshTask = task
            defer { refreshTask = nil }
            fresh = try await task.value
        }
        try checkLifetime(of: fresh, satisfies: minTTL)
        return fresh
    }

    /// Refreshes now, even when the access token is still valid (single-flight and saved
    /// atomically, as `validCredentials`).
    /// - Throws: as `validCredentials(minTTL:refresher:)`.
    public func refreshNow(refresher: @escaping TokenRefresher) async throws -> Credentials {
        try await refreshNow(refreshLockWait: nil, refresher: refresher)
    }

    /// `refreshNow(refresher:)` waiting for another process's refresh up to `refreshLockWait` (at least `lockTimeout`).
    package func refreshNow(refreshLockWait: Duration?, refresher: @escaping TokenRefresher) async throws -> Credentials {
        if let fleet { return try await fleetRefreshNow(fleet, refresher: refresher) }
        if let refreshTask { _ = try? await refreshTask.value }
        let task = Task { try await self.refresh(minTTL: .zero, refresher: refresher, force: true, lockWait: refreshLockWait) }
        refreshTask = task
        defer { refreshTask = nil }
        return try await task.value
    }

    // MARK: Internals

    /// Ends a session that no token can renew (expired, no refresh token): the user's credentials
    /// (and, by the configured policy, items) go, and the app is a guest again. Nothing is revoked:
    /// the access token is expired and there is no refresh token. The caller holds the session lock.
    func endUnrenewableSession(of user: User) throws {
        logger.notice("access token expired without a refresh token; signing out", metadata: ["user": "\(user.id)"])
        try signOutLocked(newAnonymousID: false, expectedUserID: user.id, localData: configuration.localDataOnSignOut)
        publish(.guest(anonymousID: anonymousID ?? ""))
    }

    /// Whether the signed-in session can still give a token: false only when it is known that the
    /// access token has expired and there is no refresh token (an unreadable vault says nothing).
    func isRenewable() -> Bool {
        guard let (_, credentials) = try? currentCredentials() else { return true }
        return isValid(credentials, minTTL: .zero) || credentials.refreshToken != nil
    }

    private func refresh(minTTL: Duration, refresher: @escaping TokenRefresher, force: Bool = false,
                         lockWait: Duration? = nil) async throws -> Credentials {
        // Held across the refresher call, so that exactly one process refreshes; the others
        // wait here and then find the new tokens. Acquired off the cooperative pool.
        let lock = try await sessionLock(waitingForRefresh: false, timeout: lockWait)
        defer { lock.release() }
        // Another process may have refreshed, or signed someone else in, while we waited.
        let (user, latest) = try currentCredentials()
        if !force, isValid(latest, minTTL: minTTL) { return latest }
        guard let refreshToken = latest.refreshToken else {
            // Nothing can renew this session: it ends here, as after invalid_grant, so that the
            // app is a guest again and the next sign-in is not refused as "already signed in".
            try endUnrenewableSession(of: user)
            throw VaultError(.sessionExpired, "the access token expired and there is no refresh token; signed out to guest",
                             fix: "sign in again")
        }
        // A journal left by a refresh that died: settle it first (its tokens may have landed).
        var earlier: RefreshRecovery?
        if try profiles.load()?.refreshInFlight != nil {
            earlier = try settleRefresh()
            if case .completed = earlier {
                let (_, settled) = try currentCredentials()
                if !force, isValid(settled, minTTL: minTTL) { return settled }
            }
        }
        // The journal goes to disk before the request leaves (docs/SESSIONS.md).
        let journal = RefreshJournal(journalID: try Self.randomHex(16), userID: user.id, startedAt: configuration.clock())
        try profiles.update { profile in profile.refreshInFlight = journal }
        let fresh: Credentials
        do {
            fresh = try await refresher(refreshToken)
            try Self.checkSameIdentity(refreshed: fresh.idToken, session: latest.idToken)
        } catch RefreshFailure.invalidGrant {
            logger.notice("refresh token rejected; signing out", metadata: ["user": "\(user.id)"])
            try signOutLocked(newAnonymousID: false, expectedUserID: user.id, localData: configuration.localDataOnSignOut)
            publish(.guest(anonymousID: anonymousID ?? ""))
            if case .interrupted(let startedAt) = earlier {
                throw VaultError(.sessionExpired, "the server rejected the refresh token (invalid_grant) after a refresh that was "
                                 + "interrupted at \(ISO8601Timestamp.string(from: startedAt) ?? "?"): the server had rotated it, "
                                 + "and the new tokens were never saved; signed out to guest", fix: "sign in again")
            }
            throw VaultError(.sessionExpired, "the server rejected the refresh token (invalid_grant); signed out to guest",
                             fix: "sign in again")
        } catch {
            // Sent or not, the refresh is over and reported to the caller; the old tokens stay.
            // An earlier interrupted refresh stays on record, so that a later invalid_grant is explained.
            var remembered: RefreshJournal?
            if case .interrupted(let startedAt) = earlier {
                remembered = RefreshJournal(journalID: journal.journalID, userID: user.id, startedAt: startedAt, interrupted: true)
            }
            try? profiles.update { profile in
                if profile.refreshInFlight?.journalID == journal.journalID { profile.refreshInFlight = remembered }
            }
            throw error
        }
        var merged = fresh
        if merged.refreshToken == nil { merged.refreshToken = latest.refreshToken }
        if merged.idToken == nil { merged.idToken = latest.idToken }
        guard try profiles.load()?.user?.id == user.id else {
            throw VaultError(.notSignedIn, "'\(TerminalText.escaped(user.id))' signed out while the refresh was running", fix: "sign in again")
        }
        // The new tokens and the journal's marker land in one atomic write.
        try saveRefreshed(merged, owner: SessionNamespaces.user(user.id), marker: SecureBytes(copying: Array(journal.journalID.utf8)))
        try profiles.update { profile in
            if profile.refreshInFlight?.journalID == journal.journalID { profile.refreshInFlight = nil }
        }
        logger.info("credentials refreshed", metadata: ["user": "\(user.id)"])
        if let profileUser = try profiles.load()?.user {
            publish(profileUser.onboardingComplete ? .signedIn(profileUser, merged) : .needsOnboarding(profileUser, merged))
        }
        return merged
    }

    /// A refreshed ID token must name the session's issuer, subject and audience (OpenID Connect
    /// Core §12.2). The OAuth client verified its signature before handing it over; here the
    /// claims of the two tokens are compared, and a mismatch refuses the refresh (nothing saved).
    static func checkSameIdentity(refreshed: SecureBytes?, session: SecureBytes?) throws {
        guard let refreshed, let session, let first = try? JWT.decode(session) else { return }
        func audiences(_ token: DecodedJWT) -> Set<String> {
            switch token.claims["aud"] {
            case .string(let one)?: [one]
            case .array(let many)?: Set(many.compactMap(\.stringValue))
            default: []
            }
        }
        guard let next = try? JWT.decode(refreshed), next.issuer == first.issuer, next.subject == first.subject,
              audiences(next) == audiences(first) else {
            throw VaultError(.serverRefused, "the refreshed ID token names another issuer, subject or audience than the session's "
                             + "(OpenID Connect Core §12.2); nothing was saved", fix: "sign in again")
        }
    }

    /// Classifies the journal of a refresh that did not finish: its marker in the vault means
    /// the new tokens were saved (`.completed`, journal cleared); otherwise `.interrupted`
    /// (journal kept, marked interrupted, until the next refresh or sign-out). Call with `session.lock` held.
    private func settleRefresh() throws -> RefreshRecovery? {
        guard let journal = try profiles.load()?.refreshInFlight else { return nil }
        let marker = try readMarker(SessionNamespaces.Reserved.refreshMarker, owner: SessionNamespaces.user(journal.userID))
        if marker == SecureBytes(copying: Array(journal.journalID.utf8)) {
            try profiles.update { profile in
                if profile.refreshInFlight?.journalID == journal.journalID { profile.refreshInFlight = nil }
            }
            logger.notice("a refresh interrupted by a crash had saved its tokens", metadata: ["user": "\(journal.userID)"])
            return .completed(startedAt: journal.startedAt)
        }
        try profiles.update { profile in
            if profile.refreshInFlight?.journalID == journal.journalID { profile.refreshInFlight?.interrupted = true }
        }
        logger.warning("a refresh was interrupted before its tokens were saved; the server may have rotated the refresh token",
                       metadata: ["user": "\(journal.userID)"])
        return .interrupted(startedAt: journal.startedAt)
    }

    package func currentCredentials() throws -> (User, Credentials) {
        guard let user = try profiles.load()?.user else { throw VaultError(.notSignedIn, "nobody is signed in", fix: "sign in first") }
        guard let credentials = try readCredentials(owner: SessionNamespaces.user(user.id)) else {
            throw VaultError(.sessionExpired, "no credentials are stored for '\(TerminalText.escaped(user.id))'", fix: "sign in again")
        }
        return (user, credentials)
    }

    /// Valid when the token outlives now + leeway + minTTL. The leeway (clock skew, latency)
    /// is capped at half the token's lifetime as issued, so a short-lived token is never
    /// expired at the moment it was issued: a 5 s token with the default 60 s leeway counts
    /// as valid for its first 2.5 s.
    package func isValid(_ credentials: Credentials, minTTL: Duration) -> Bool {
        Self.isValid(credentials, minTTL: minTTL, leeway: configuration.leeway, now: configuration.clock())
    }

    /// The expiry rule of every session, file or fleet: valid when the token outlives
    /// `now` + the effective leeway + `minTTL`; a token without an expiry is always valid.
    nonisolated static func isValid(_ credentials: Credentials, minTTL: Duration, leeway: Duration, now: Date) -> Bool {
        guard let expiresAt = credentials.expiresAt else { return true }
        let margin = effectiveLeeway(for: credentials, leeway: leeway) + seconds(minTTL)
        return expiresAt > now.addingTimeInterval(margin)
    }

    func effectiveLeeway(for credentials: Credentials) -> TimeInterval {
        Self.effectiveLeeway(for: credentials, leeway: configuration.leeway)
    }

    /// The leeway, capped at half the token's lifetime as issued.
    nonisolated static func effectiveLeeway(for credentials: Credentials, leeway: Duration) -> TimeInterval {
        let leeway = seconds(leeway)
        guard let expiresAt = credentials.expiresAt, let issuedAt = credentials.issuedAt else { return leeway }
        return min(leeway, max(0, expiresAt.timeIntervalSince(issuedAt)) / 2)
    }

    /// A token that was just refreshed must live `minTTL`; otherwise every call would refresh again.
    func checkLifetime(of credentials: Credentials, satisfies minTTL: Duration) throws {
        guard minTTL > .zero, let expiresAt = credentials.expiresAt else { return }
        let lifetime = expiresAt.timeIntervalSince(configuration.clock())
        guard lifetime > Self.seconds(minTTL) else {
            throw VaultError(.minTTLTooLarge,
                             "the minimum time to live (\(Int(Self.seconds(minTTL))) s) is longer than a fresh access token lives (\(max(0, Int(lifetime))) s)",
                             fix: "ask for a shorter minimum time to live")
        }
    }

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

    @discardableResult
    func signOutLocked(newAnonymousID: Bool, expectedUserID: String?, localData: LocalDataPolicy) throws -> Credentials? {
        let (signedOut, oldGuest, guestID) = try profiles.update { profile -> (User?, String?, String?) in
            if let expectedUserID, profile.user?.id != expectedUserID { return (nil, nil, profile.anonymousID) }
            let user = profile.user ?? profile.pendingSignIn?.user
            let oldGuest = profile.anonymousID
            if let user {
                var record = profile.returningUsers[user.id] ?? ReturningUser()
                // Onboarding's answers are the user's local data: they go with a wipe, stay with `.keep`.
                record.onboardingComplete = localData == .keep && (record.onboardingComplete || user.onboardingComplete)
                record.localDataKept = localData == .keep
                profile.returningUsers[user.id] = record
            }
            profile.user = nil
            profile.pendingSignIn = nil
            profile.refreshInFlight = nil
            if newAnonymousID || profile.anonymousID == nil { profile.anonymousID = try Self.newAnonymousID() }
            return (user, oldGuest, profile.anonymousID)
        }
        anonymousID = guestID
        let replacedGuest = oldGuest.flatMap { $0 == guestID ? nil : $0 }
        guard signedOut != nil || replacedGuest != nil else { return nil }
        if let agent {
            return try endSessionThroughAgent(agent, user: signedOut, localData: localData, replacedGuest: replacedGuest)
        }
        guard let store = try openStore(create: false) else { return nil }
        let removed = try store.update { transaction -> Credentials? in
            var credentials: Credentials?
            if let user = signedOut {
                let owner = SessionNamespaces.user(user.id)
                credentials = (try? CredentialRecords.read(owner: owner, from: transaction)) ?? nil
                Self.removeUserEntries(owner: owner, localData: localData, in: &transaction)
            }
            // The replaced guest's items go with it: nothing is left under an id no one uses.
            if let replacedGuest { transaction.removeAll(owner: SessionNamespaces.guest(replacedGuest)) }
            transaction.rotateDataKey()
            return credentials
        }
        if let user = signedOut { logger.info("signed out", metadata: ["user": "\(user.id)"]) }
        return removed
    }

    /// Removes a signed-out user's credentials (always) and items (unless kept).
    static func removeUserEntries(owner: String, localData: LocalDataPolicy, in transaction: inout VaultTransaction) {
        guard localData == .keep else {
            transaction.removeAll(owner: owner)
            return
        }
        for entry in transaction.list(owner: owner) where entry.name.hasPrefix(SessionNamespaces.Reserved.prefix) {
            try? transaction.remove(named: entry.name, owner: owner)
        }
    }

    /// Finishes a sign-in whose vault write landed, or forgets one whose vault write did not.
    private func recoverInterruptedSignIn() async throws {
        let lock = try await sessionLock()
        defer { lock.release() }
        guard let journal = try profiles.load()?.pendingSignIn else { return }
        try settle(journal)
    }

    /// Rolls a journalled sign-in forward when its vault write carries the marker, back otherwise.
    /// Call with `session.lock` held.
    private func settle(_ journal: PendingSignIn) throws {
        if try signInLanded(journal) {
            try commit(journal)
            logger.notice("finished an interrupted sign-in", metadata: ["user": "\(journal.userID)"])
        } else {
            try profiles.update { profile in profile.pendingSignIn = nil }
            logger.notice("rolled back an interrupted sign-in", metadata: ["user": "\(journal.userID)"])
        }
    }

    /// Whether the vault write of a journalled sign-in landed: the vault carries its marker.
    private func signInLanded(_ journal: PendingSignIn) throws -> Bool {
        try readMarker(SessionNamespaces.Reserved.migration, owner: SessionNamespaces.user(journal.userID))
            == SecureBytes(copying: Array(journal.journalID.utf8))
    }

    /// `signInLanded`, with the unlock off the cooperative pool.
    private func signInLandedOffPool(_ journal: PendingSignIn) async throws -> Bool {
        try await openVaultOffPool()
        return try signInLanded(journal)
    }

    /// The commit point of a sign-in: the profile names the user. Then the marker goes.
    private func commit(_ journal: PendingSignIn) throws {
        try profiles.update { profile in
            profile.user = journal.user
            profile.pendingSignIn = nil
        }
        if let agent {
            try agent.client.remove(names: [SessionNamespaces.Reserved.migration], owner: SessionNamespaces.user(journal.userID),
                                    rotatingDataKey: false, directory: agent.directory)
        } else if let store = try openStore(create: false) {
            try store.update { transaction in
                let owner = SessionNamespaces.user(journal.userID)
                if transaction.metadata(named: SessionNamespaces.Reserved.migration, owner: owner) != nil {
                    try transaction.remove(named: SessionNamespaces.Reserved.migration, owner: owner)
                }
            }
        }
    }

    /// Removes what a crash during sign-out left of users the profile does not name: their
    /// credentials always, their items unless they signed out keeping local data. The
    /// decision is taken again under `session.lock`, from the profile as it is then, so a
    /// sign-in that another process finishes meanwhile is never mistaken for an orphan.
    private func removeOrphanedCredentials(profile: Profile) async throws {
        // Through the agent they stay until a process that opens the vault itself starts the session.
        guard agent == nil, let store = try await openStoreOffPool(create: false) else { return }
        guard try store.snapshot({ Self.orphans(in: $0, profile: profile) }).isEmpty == false else { return }
        let lock = try await sessionLock()
        defer { lock.release() }
        let profile = try profiles.load() ?? Profile()
        guard profile.pendingSignIn == nil else { return }
        let removed = try store.update { transaction -> Int in
            let orphans = Self.orphans(in: transaction, profile: profile)
            guard !orphans.isEmpty else { return 0 }
            for (owner, policy) in orphans { Self.removeUserEntries(owner: owner, localData: policy, in: &transaction) }
            transaction.rotateDataKey()
            return orphans.count
        }
        if removed > 0 {
            logger.notice("removed credentials left by an interrupted sign-out", metadata: ["namespaces": "\(removed)"])
        }
    }

    /// User namespaces that hold what should be gone, with what to remove from each: a
    /// namespace the profile does not name, unless its user kept local data and no credential
    /// is left in it.
    static func orphans(in view: borrowing VaultTransaction, profile: Profile) -> [(String, LocalDataPolicy)] {
        let current = profile.user.map { SessionNamespaces.user($0.id) }
        return view.owners.compactMap { owner -> (String, LocalDataPolicy)? in
            guard owner.hasPrefix("user:"), !(current.map { owner.sameBytes(as: $0) } ?? false) else { return nil }
            let userID = String(owner.dropFirst("user:".count))
            guard profile.returningUsers[userID]?.localDataKept == true else { return (owner, .wipe) }
            let holdsCredentials = view.list(owner: owner).contains { $0.name.hasPrefix(SessionNamespaces.Reserved.prefix) }
            return holdsCredentials ? (owner, .keep) : nil
        }
    }

    static func migrate(into transaction: inout VaultTransaction, journal: PendingSignIn, credentials: Credentials,
                        policy: MergePolicy, fromGuest: Bool) throws -> MigrationReport {
        let guest = SessionNamespaces.guest(journal.anonymousID)
        let account = SessionNamespaces.user(journal.userID)
        try CredentialRecords.write(credentials, owner: account, into: &transaction)
        var moved: [String] = [], stayed: [String] = [], conflicts: [MigrationReport.Conflict] = []
        if fromGuest {
            for item in transaction.list(owner: guest) {
                guard item.transferable, !item.name.hasPrefix(SessionNamespaces.Reserved.prefix) else {
                    stayed.append(item.name)
                    continue
                }
                if let existing = transaction.metadata(named: item.name, owner: account) {
                    let empty = SecureBytes(copying: [])
                    let guestSide = MergeCandidate(metadata: item, value: policy.needsValues
                                                   ? try transaction.secret(named: item.name, owner: guest) : empty)
                    let accountSide = MergeCandidate(metadata: existing, value: policy.needsValues
                                                     ? try transaction.secret(named: item.name, owner: account) : empty)
                    guard let decision = try policy.resolve(guest: guestSide, account: accountSide) else {
                        throw VaultError(.mergeConflict, "the account already has an item named '\(item.name)'",
                                         fix: "sign in with another merge policy (keepAccount, keepGuest, newestWins)")
                    }
                    conflicts.append(.init(name: item.name, resolution: decision.resolution))
                    switch decision {
                    case .keepAccount:
                        stayed.append(item.name)
                        continue
                    case .keepGuest:
                        break
                    case let .merged(value):
                        try transaction.put(NewEntry(name: existing.name, owner: account, secret: value, kind: existing.kind,
                                                     label: existing.label, expiresAt: existing.expiresAt,
                                                     transferable: existing.transferable), replace: true)
                        try transaction.remove(named: item.name, owner: guest)
                        moved.append(item.name)
                        continue
                    }
                }
                try transaction.move(named: item.name, from: guest, to: account, replace: true)
                moved.append(item.name)
            }
        }
        try transaction.put(NewEntry(name: SessionNamespaces.Reserved.migration, owner: account,
                                     secret: SecureBytes(copying: Array(journal.journalID.utf8)), transferable: false),
                            replace: true)
        return MigrationReport(anonymousID: journal.anonymousID, userID: journal.userID, moved: moved,
                               conflicts: conflicts, stayed: stayed)
    }

    /// `openStore`, with the key derivation (scrypt for a passphrase) on a Dispatch thread,
    /// so an unlock never holds one of the cooperative pool's few threads.
    func openStoreOffPool(create: Bool) async throws -> SecretStore? {
        if let store { return store }
        try requireDeviceSession("items")
        guard let key else { return try openStore(create: create) }
        let directory = directory
        let options = configuration.storeOptions
        let opened = try await BlockingWork.run { () throws -> SecretStore? in
            if SecretStore.exists(in: directory) { return try SecretStore.open(in: directory, key: key, options: options) }
            return create ? try SecretStore.create(in: directory, key: key, options: options) : nil
        }
        if store == nil { store = opened }
        return store
    }

    func openStore(create: Bool) throws -> SecretStore? {
        if let store { return store }
        try requireDeviceSession("items")
        guard let key else {
            if SecretStore.exists(in: directory) || create { throw SessionUnavailable(reason: .locked, error: nil) }
            return nil
        }
        if SecretStore.exists(in: directory) {
            store = try SecretStore.open(in: directory, key: key, options: configuration.storeOptions)
        } else if create {
            store = try SecretStore.create(in: directory, key: key, options: configuration.storeOptions)
        }
        return store
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
