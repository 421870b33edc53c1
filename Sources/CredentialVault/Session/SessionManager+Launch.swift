import FoundationEssentials
import Logging
import VaultCrypto

/// Start-up: `restore()` rebuilds the session from the profile and the vault (finishing an
/// interrupted sign-in, settling a refresh journal, removing what a crashed sign-out left);
/// `peek()` reports the same without writing.
extension SessionManager {
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
        await backend.restoredState(of: self, minTTL: minTTL, refreshLockWait: refreshLockWait)
    }

    /// `loadState` of a device session: from the profile and the vault.
    func restoredDeviceState(minTTL: Duration, refreshLockWait: Duration?) async -> SessionState {
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
        await backend.peekedState(of: self, minTTL: minTTL)
    }

    /// `peek` of a device session.
    func peekedDeviceState(minTTL: Duration) async -> SessionState {
        do {
            let loaded = try profiles.load()
            anonymousID = loaded?.anonymousID
            try device.checkReadable()
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
        let users = try await device.sessionOwners()
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
        let device = try backend.device(for: .profileRecovery)
        let lock = try await sessionLock()
        defer { lock.release() }
        guard try profiles.load() == nil, let vault = try await device.vaultOffPool(create: false) else { return [] }
        let sessions = try vault.snapshot { view in
            try Self.sessionOwners(in: view.list()).map { owner in (owner, try CredentialRecords.read(owner: owner, from: view)) }
        }
        guard !sessions.isEmpty else { return [] }
        for (owner, credentials) in sessions {
            if let credentials { await revoke(String(owner.dropFirst("user:".count)), credentials) }
        }
        try vault.update { transaction in
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
        try await device.prepare()
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
}
