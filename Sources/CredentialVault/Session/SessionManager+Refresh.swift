import FoundationEssentials
import Logging
import VaultCrypto

/// Fresh credentials: the single-flight refresh (in this process and, through `session.lock`,
/// across processes), its journal in the profile, the identity check of a refreshed ID token,
/// and the validity rules (leeway, minimum time to live).
extension SessionManager {
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
        try await backend.validCredentials(of: self, minTTL: minTTL, refreshLockWait: refreshLockWait, refresher: refresher)
    }

    /// `validCredentials` of a device session: single-flight through `refreshTask` and `session.lock`.
    func validDeviceCredentials(minTTL: Duration, refreshLockWait: Duration?, refresher: @escaping TokenRefresher) async throws -> Credentials {
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
        try await backend.refreshNow(of: self, refreshLockWait: refreshLockWait, joining: false, refresher: refresher)
    }

    /// `refreshNow` of a device session: after a refresh running in this process, a forced one.
    func refreshDeviceNow(refreshLockWait: Duration?, refresher: @escaping TokenRefresher) async throws -> Credentials {
        if let refreshTask { _ = try? await refreshTask.value }
        let task = Task { try await self.refresh(minTTL: .zero, refresher: refresher, force: true, lockWait: refreshLockWait) }
        refreshTask = task
        defer { refreshTask = nil }
        return try await task.value
    }

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
    func settleRefresh() throws -> RefreshRecovery? {
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
}
