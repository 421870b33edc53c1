import FoundationEssentials
import Logging
import VaultCrypto

/// Sign-in from guest: the credentials and the migrated guest items land in one atomic vault
/// write, then the profile names the user (the commit point); the sign-in journal lets
/// `restore()` finish or roll back a sign-in a crash interrupted.
extension SessionManager {
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
        try await backend.signIn(of: self, user: user, credentials: credentials, policy: policy)
    }

    /// `signIn` on a device: the journal, one vault write with the migrated guest items, the profile last.
    func signInOnDevice(user: User, credentials: Credentials, policy: MergePolicy) async throws -> MigrationReport {
        let device = try self.device
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
            guard let vault = try await device.vaultOffPool(create: true) else { throw SessionUnavailable(reason: .locked, error: nil) }
            report = try vault.update { transaction in
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

    /// Marks onboarding finished for the signed-in user; remembered for that user across
    /// sign-out, so the same user signing in again on this device skips it.
    /// - Throws: `.notSignedIn`; profile store errors.
    public func completeOnboarding() async throws {
        try requireDeviceSession(.onboarding)
        try profiles.update { profile in
            guard profile.user != nil else { throw VaultError(.notSignedIn, "nobody is signed in") }
            profile.user?.onboardingComplete = true
        }
        publish(await loadState(minTTL: .zero))
    }

    /// Finishes a sign-in whose vault write landed, or forgets one whose vault write did not.
    func recoverInterruptedSignIn() async throws {
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
    func signInLandedOffPool(_ journal: PendingSignIn) async throws -> Bool {
        try await device.prepare()
        return try signInLanded(journal)
    }

    /// The commit point of a sign-in: the profile names the user. Then the marker goes.
    private func commit(_ journal: PendingSignIn) throws {
        try profiles.update { profile in
            profile.user = journal.user
            profile.pendingSignIn = nil
        }
        try device.remove(names: [SessionNamespaces.Reserved.migration], owner: SessionNamespaces.user(journal.userID))
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
                                                     transferable: existing.transferable, attributes: existing.attributes),
                                            replace: true)
                        try transaction.remove(named: item.name, owner: guest)
                        // The guest's value went into the merge: no earlier version of it stays under the guest.
                        transaction.forgetHistory(of: EntryKey(owner: guest, name: item.name))
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
}
