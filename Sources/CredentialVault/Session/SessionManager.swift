import Foundation
import Logging
import VaultCrypto

/// The session: pairs the plain profile with the encrypted credentials and answers
/// "who is using the app right now?" at start-up, sign-in, refresh and sign-out.
///
/// Write order makes the profile the commit point: on sign-in the credentials (and the
/// migrated guest items) land in the vault first, in one atomic write, and the profile
/// names the user last; on sign-out the profile forgets the user first and the vault is
/// shredded after. A journal in the profile (`pendingSignIn`) with a marker in the vault
/// lets `restore()` finish or roll back a sign-in that a crash interrupted.
public actor SessionManager {
    /// The directory holding `secrets.vault` and `profile.json`.
    public let directory: String
    private let key: VaultKey?
    private let configuration: SessionConfiguration
    private let profiles: ProfileStore
    private let sessionLockPath: String
    private var store: SecretStore?
    private var refreshTask: Task<Credentials, any Error>?
    private var logger: Logger { configuration.logger }

    /// The anonymous id of this install, known after `restore()`.
    public private(set) var anonymousID: String?

    /// What `restore()` found of a refresh a crash interrupted, if it found one
    /// (docs/SESSIONS.md, "A kill during refresh").
    public private(set) var refreshRecovery: RefreshRecovery?

    /// Creates a session over `directory`.
    /// - Parameters:
    ///   - directory: The vault directory (created 0700 on first write).
    ///   - key: The vault key; nil leaves the vault locked (guests without a vault still work).
    ///   - configuration: Leeway, clock, timeouts, logger.
    public init(directory: String, key: VaultKey?, configuration: SessionConfiguration = SessionConfiguration()) {
        self.directory = directory
        self.key = key
        self.configuration = configuration
        self.profiles = ProfileStore(directory: directory, lockTimeout: configuration.lockTimeout)
        self.sessionLockPath = (directory as NSString).appendingPathComponent("session.lock")
    }

    // MARK: Start-up

    /// Rebuilds the session from both stores, finishing or rolling back an interrupted
    /// sign-in and shredding credentials a crashed sign-out left behind.
    /// - Parameter minTTL: How long the access token must stay valid (on top of the leeway)
    ///   to count as signed in.
    /// - Returns: The session state. Never throws: failures are `.unavailable` with a reason.
    public func restore(minTTL: Duration = .zero) async -> SessionState {
        do {
            // Read first; only the very first launch writes (the new anonymous id).
            var profile = try profiles.load() ?? Profile()
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
                let lock = try await sessionLock()
                refreshRecovery = try settleRefresh()
                lock.release()
                profile = try profiles.load() ?? profile
            } else if let journal = profile.refreshInFlight {
                refreshRecovery = .interrupted(startedAt: journal.startedAt)
            }
            guard let user = profile.user else {
                try await shredOrphanedCredentials()
                return .guest(anonymousID: profile.anonymousID ?? "")
            }
            guard let store = try openStore(create: false) else { return .expired(user, hasRefreshToken: false, expiresAt: nil) }
            let credentials = try store.snapshot { view in
                try CredentialRecords.read(owner: SessionNamespaces.user(user.id), from: view)
            }
            guard let credentials else { return .expired(user, hasRefreshToken: false, expiresAt: nil) }
            guard isValid(credentials, minTTL: minTTL) else {
                return .expired(user, hasRefreshToken: credentials.refreshToken != nil, expiresAt: credentials.expiresAt)
            }
            return user.onboardingComplete ? .signedIn(user, credentials) : .needsOnboarding(user, credentials)
        } catch let unavailable as SessionUnavailable {
            logger.warning("session unavailable", metadata: ["reason": "\(unavailable.reason.rawValue)"])
            return .unavailable(unavailable)
        } catch let error as VaultError {
            logger.warning("session unavailable", metadata: ["error": "\(error.code)"])
            return .unavailable(SessionUnavailable(error))
        } catch {
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
        let lock = try await sessionLock()
        defer { lock.release() }
        let current = try profiles.load() ?? Profile()
        if let signedIn = current.user, signedIn.id != user.id {
            throw VaultError(.alreadyExists, "already signed in as '\(signedIn.id)'", fix: "sign out first", topic: .alreadySignedIn)
        }
        let anonymous = try current.anonymousID ?? Self.newAnonymousID()
        let journal = PendingSignIn(journalID: try Self.randomHex(16), userID: user.id, anonymousID: anonymous, user: user,
                                    startedAt: configuration.clock())
        try profiles.update { profile in
            profile.anonymousID = anonymous
            profile.pendingSignIn = journal
        }
        let report: MigrationReport
        do {
            guard let store = try openStore(create: true) else { throw SessionUnavailable(reason: .locked, error: nil) }
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
        return report
    }

    /// Signs the user out: the profile forgets the user first (the commit point), then the
    /// user's credentials and items are removed and the data key rotated, so nothing of
    /// theirs can be decrypted with the key material held afterwards.
    /// - Parameter newAnonymousID: Give the guest a new anonymous id instead of the old one.
    /// - Returns: The credentials that were removed (to revoke them at the server), if any.
    /// - Throws: store errors; `.busy`.
    @discardableResult
    public func signOut(newAnonymousID: Bool = false) async throws -> Credentials? {
        let lock = try await sessionLock()
        defer { lock.release() }
        return try signOutLocked(newAnonymousID: newAnonymousID, expectedUserID: nil)
    }

    /// The "skip" button: become a guest with default settings and no guest items.
    /// Signs out first when someone is signed in.
    /// - Parameter resetAnonymousID: Start over with a new anonymous id.
    /// - Returns: The anonymous id.
    public func enterGuestMode(resetAnonymousID: Bool = false) async throws -> String {
        let lock = try await sessionLock()
        defer { lock.release() }
        if try profiles.load()?.user != nil { try signOutLocked(newAnonymousID: false, expectedUserID: nil) }
        let (old, new) = try profiles.update { profile -> (String?, String) in
            let old = profile.anonymousID
            if resetAnonymousID || profile.anonymousID == nil { profile.anonymousID = try Self.newAnonymousID() }
            profile.settings = [:]
            return (old, profile.anonymousID ?? "")
        }
        if let store = try openStore(create: false) {
            try store.update { transaction in
                for owner in Set([old, new].compactMap { $0 }) { transaction.removeAll(owner: SessionNamespaces.guest(owner)) }
            }
        }
        anonymousID = new
        logger.info("entered guest mode")
        return new
    }

    /// Marks onboarding finished for the signed-in user.
    /// - Throws: `.notSignedIn`; profile store errors.
    public func completeOnboarding() throws {
        try profiles.update { profile in
            guard profile.user != nil else { throw VaultError(.notSignedIn, "nobody is signed in") }
            profile.user?.onboardingComplete = true
        }
    }

    // MARK: Items

    /// Stores an item for whoever is using the app: the guest or the signed-in user.
    /// - Throws: store errors; `.invalidInput` for reserved names (`session.`).
    public func saveItem(_ entry: NewEntry, replace: Bool = true) throws {
        guard !entry.name.hasPrefix(SessionNamespaces.Reserved.prefix) else {
            throw VaultError(.invalidInput, "names starting with 'session.' are reserved")
        }
        var entry = entry
        entry.owner = try currentOwner()
        guard let store = try openStore(create: true) else { throw SessionUnavailable(reason: .locked, error: nil) }
        try store.put(entry, replace: replace)
    }

    /// The items of whoever is using the app (without the session's own entries).
    public func items() throws -> [EntryMetadata] {
        let owner = try currentOwner()
        guard let store = try openStore(create: false) else { return [] }
        return try store.list(owner: owner).filter { !$0.name.hasPrefix(SessionNamespaces.Reserved.prefix) }
    }

    /// One item's secret for whoever is using the app.
    public func item(named name: String) throws -> SecureBytes {
        let owner = try currentOwner()
        guard let store = try openStore(create: false) else { throw VaultError.entryNotFound(name) }
        return try store.secret(named: name, owner: owner)
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
    public func validCredentials(minTTL: Duration = .zero, refresher: @escaping TokenRefresher) async throws -> Credentials {
        if let refreshTask {
            let shared = try await refreshTask.value
            if isValid(shared, minTTL: minTTL) { return shared }
        }
        let (_, credentials) = try currentCredentials()
        if isValid(credentials, minTTL: minTTL) { return credentials }
        if let refreshTask { return try await refreshTask.value }
        let task = Task { try await self.refresh(minTTL: minTTL, refresher: refresher) }
        refreshTask = task
        defer { refreshTask = nil }
        return try await task.value
    }

    /// Refreshes now, even when the access token is still valid (single-flight and saved
    /// atomically, as `validCredentials`).
    /// - Throws: as `validCredentials(minTTL:refresher:)`.
    public func refreshNow(refresher: @escaping TokenRefresher) async throws -> Credentials {
        if let refreshTask { _ = try? await refreshTask.value }
        let task = Task { try await self.refresh(minTTL: .zero, refresher: refresher, force: true) }
        refreshTask = task
        defer { refreshTask = nil }
        return try await task.value
    }

    // MARK: Internals

    private func refresh(minTTL: Duration, refresher: @escaping TokenRefresher, force: Bool = false) async throws -> Credentials {
        // Held across the refresher call, so that exactly one process refreshes; the others
        // wait here and then find the new tokens. Acquired off the actor's thread.
        let lock = try await sessionLock(waitingForRefresh: false)
        defer { lock.release() }
        // Another process may have refreshed, or signed someone else in, while we waited.
        let (user, latest) = try currentCredentials()
        if !force, isValid(latest, minTTL: minTTL) { return latest }
        guard let refreshToken = latest.refreshToken else {
            throw VaultError(.sessionExpired, "the access token expired and there is no refresh token", fix: "sign in again")
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
        } catch RefreshFailure.invalidGrant {
            logger.notice("refresh token rejected; signing out", metadata: ["user": "\(user.id)"])
            try signOutLocked(newAnonymousID: false, expectedUserID: user.id)
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
        guard let store = try openStore(create: false) else { throw SessionUnavailable(reason: .locked, error: nil) }
        guard try profiles.load()?.user?.id == user.id else {
            throw VaultError(.notSignedIn, "'\(user.id)' signed out while the refresh was running", fix: "sign in again")
        }
        // The new tokens and the journal's marker land in one atomic write.
        try store.update { transaction in
            let owner = SessionNamespaces.user(user.id)
            try CredentialRecords.write(merged, owner: owner, into: &transaction)
            try transaction.put(NewEntry(name: SessionNamespaces.Reserved.refreshMarker, owner: owner,
                                         secret: SecureBytes(copying: Array(journal.journalID.utf8)), transferable: false),
                                replace: true)
        }
        try profiles.update { profile in
            if profile.refreshInFlight?.journalID == journal.journalID { profile.refreshInFlight = nil }
        }
        logger.info("credentials refreshed", metadata: ["user": "\(user.id)"])
        return merged
    }

    /// Classifies the journal of a refresh that did not finish: its marker in the vault means
    /// the new tokens were saved (`.completed`, journal cleared); otherwise `.interrupted`
    /// (journal kept, marked interrupted, until the next refresh or sign-out). Call with `session.lock` held.
    private func settleRefresh() throws -> RefreshRecovery? {
        guard let journal = try profiles.load()?.refreshInFlight else { return nil }
        var landed = false
        if let store = try openStore(create: false) {
            landed = try store.snapshot { view in
                let owner = SessionNamespaces.user(journal.userID)
                guard view.metadata(named: SessionNamespaces.Reserved.refreshMarker, owner: owner) != nil else { return false }
                return try view.secret(named: SessionNamespaces.Reserved.refreshMarker, owner: owner)
                    == SecureBytes(copying: Array(journal.journalID.utf8))
            }
        }
        if landed {
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

    private func currentCredentials() throws -> (User, Credentials) {
        guard let user = try profiles.load()?.user else { throw VaultError(.notSignedIn, "nobody is signed in", fix: "sign in first") }
        guard let store = try openStore(create: false),
              let credentials = try store.snapshot({ try CredentialRecords.read(owner: SessionNamespaces.user(user.id), from: $0) }) else {
            throw VaultError(.sessionExpired, "no credentials are stored for '\(user.id)'", fix: "sign in again")
        }
        return (user, credentials)
    }

    private func isValid(_ credentials: Credentials, minTTL: Duration) -> Bool {
        guard let expiresAt = credentials.expiresAt else { return true }
        let margin = Self.seconds(configuration.leeway) + Self.seconds(minTTL)
        return expiresAt > configuration.clock().addingTimeInterval(margin)
    }

    private func currentOwner() throws -> String {
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
    private func signOutLocked(newAnonymousID: Bool, expectedUserID: String?) throws -> Credentials? {
        let (signedOut, guestID) = try profiles.update { profile -> (User?, String?) in
            if let expectedUserID, profile.user?.id != expectedUserID { return (nil, profile.anonymousID) }
            let user = profile.user ?? profile.pendingSignIn?.user
            profile.user = nil
            profile.pendingSignIn = nil
            profile.refreshInFlight = nil
            if newAnonymousID || profile.anonymousID == nil { profile.anonymousID = try Self.newAnonymousID() }
            return (user, profile.anonymousID)
        }
        anonymousID = guestID
        guard let user = signedOut, let store = try openStore(create: false) else { return nil }
        let removed = try store.update { transaction -> Credentials? in
            let owner = SessionNamespaces.user(user.id)
            let credentials = try? CredentialRecords.read(owner: owner, from: transaction)
            transaction.removeAll(owner: owner)
            transaction.rotateDataKey()
            return credentials ?? nil
        }
        logger.info("signed out", metadata: ["user": "\(user.id)"])
        return removed
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
        let landed: Bool
        if let store = try openStore(create: false) {
            landed = try store.snapshot { view in
                guard view.metadata(named: SessionNamespaces.Reserved.migration, owner: SessionNamespaces.user(journal.userID)) != nil else {
                    return false
                }
                let marker = try view.secret(named: SessionNamespaces.Reserved.migration, owner: SessionNamespaces.user(journal.userID))
                return marker == SecureBytes(copying: Array(journal.journalID.utf8))
            }
        } else {
            landed = false
        }
        if landed {
            try commit(journal)
            logger.notice("finished an interrupted sign-in", metadata: ["user": "\(journal.userID)"])
        } else {
            try profiles.update { profile in profile.pendingSignIn = nil }
            logger.notice("rolled back an interrupted sign-in", metadata: ["user": "\(journal.userID)"])
        }
    }

    /// The commit point of a sign-in: the profile names the user. Then the marker goes.
    private func commit(_ journal: PendingSignIn) throws {
        try profiles.update { profile in
            profile.user = journal.user
            profile.pendingSignIn = nil
        }
        if let store = try openStore(create: false) {
            try store.update { transaction in
                let owner = SessionNamespaces.user(journal.userID)
                if transaction.metadata(named: SessionNamespaces.Reserved.migration, owner: owner) != nil {
                    try transaction.remove(named: SessionNamespaces.Reserved.migration, owner: owner)
                }
            }
        }
    }

    /// Removes the namespaces of users the profile does not name (left by a crash during sign-out).
    /// The decision is taken again under `session.lock`, from the profile as it is then, so a
    /// sign-in that another process finishes meanwhile is never mistaken for an orphan.
    private func shredOrphanedCredentials() async throws {
        guard let store = try openStore(create: false) else { return }
        let suspects = try store.snapshot { view in view.owners.contains { $0.hasPrefix("user:") } }
        guard suspects else { return }
        let lock = try await sessionLock()
        defer { lock.release() }
        let profile = try profiles.load()
        guard profile?.pendingSignIn == nil else { return }
        let keep = profile?.user.map { SessionNamespaces.user($0.id) }
        let removed = try store.update { transaction -> Int in
            let orphans = transaction.owners.filter { owner in
                owner.hasPrefix("user:") && !(keep.map { owner.sameBytes(as: $0) } ?? false)
            }
            guard !orphans.isEmpty else { return 0 }
            for owner in orphans { transaction.removeAll(owner: owner) }
            transaction.rotateDataKey()
            return orphans.count
        }
        if removed > 0 {
            logger.notice("shredded credentials left by an interrupted sign-out", metadata: ["namespaces": "\(removed)"])
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
                    guard let resolution = policy.resolve(guest: item, account: existing) else {
                        throw VaultError(.mergeConflict, "the account already has an item named '\(item.name)'",
                                         fix: "sign in with another merge policy (keepAccount, keepGuest, newestWins)")
                    }
                    conflicts.append(.init(name: item.name, resolution: resolution))
                    guard resolution == .keepGuest else {
                        stayed.append(item.name)
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

    private func openStore(create: Bool) throws -> SecretStore? {
        if let store { return store }
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
    private func sessionLock(waitingForRefresh: Bool = true) async throws -> FileLock {
        if waitingForRefresh, let refreshTask { _ = try? await refreshTask.value }
        try SecureFileSystem.ensurePrivateDirectory(directory, create: true)
        let path = sessionLockPath
        let timeout = configuration.lockTimeout
        return try await Task.detached { try FileLock.acquire(path: path, mode: .exclusive, timeout: timeout) }.value
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

    static func seconds(_ duration: Duration) -> TimeInterval {
        let (seconds, attoseconds) = duration.components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }
}
