import FoundationEssentials
import Logging
import VaultCrypto

/// Sign-out and guest mode: the profile forgets the user first (the commit point), then the
/// user's entries leave the vault under a new data key; credentials a crashed sign-out left are
/// removed at the next launch.
extension SessionManager {
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
        try await backend.signOut(of: self, localData: localData, newAnonymousID: newAnonymousID, resetSettings: resetSettings)
    }

    /// `signOut` on a device: the profile first, then the vault.
    func signOutOnDevice(localData: LocalDataPolicy?, newAnonymousID: Bool, resetSettings: Bool) async throws -> Credentials? {
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
        let device = try backend.device(for: .guestMode)
        let lock = try await sessionLock()
        defer { lock.release() }
        // The vault is opened before anything changes: where it cannot be (locked, or held by the
        // agent) guest mode is refused with the user still signed in, never half done.
        let vault = try await device.vaultOffPool(create: false)
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
        if let vault {
            try vault.update { transaction in
                for owner in Set([old, new].compactMap { $0 }) { transaction.removeAll(owner: SessionNamespaces.guest(owner)) }
            }
        }
        anonymousID = new
        logger.info("entered guest mode")
        publish(.guest(anonymousID: new))
        return (new, removed)
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
        let removed = try device.endSession(owner: signedOut.map { SessionNamespaces.user($0.id) }, localData: localData,
                                            replacedGuest: replacedGuest.map(SessionNamespaces.guest))
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

    /// Removes what a crash during sign-out left of users the profile does not name: their
    /// credentials always, their items unless they signed out keeping local data. The
    /// decision is taken again under `session.lock`, from the profile as it is then, so a
    /// sign-in that another process finishes meanwhile is never mistaken for an orphan.
    func removeOrphanedCredentials(profile: Profile) async throws {
        guard let vault = try await device.housekeepingVault() else { return }
        guard try vault.snapshot({ Self.orphans(in: $0, profile: profile) }).isEmpty == false else { return }
        let lock = try await sessionLock()
        defer { lock.release() }
        let profile = try profiles.load() ?? Profile()
        guard profile.pendingSignIn == nil else { return }
        let removed = try vault.update { transaction -> Int in
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
}
