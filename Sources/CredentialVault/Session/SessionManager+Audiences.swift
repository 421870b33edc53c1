import FoundationEssentials
import VaultCrypto

/// Gets an access token for one resource with the session's refresh token (RFC 8707
/// `resource`): the refresh token, the audience, and the answer (which may rotate the refresh token).
public typealias AudienceTokenRefresher = @Sendable (_ refreshToken: SecureBytes, _ audience: String) async throws -> Credentials

extension SessionManager {
    /// The longest audience accepted (a URI, RFC 8707 §2).
    static let maximumAudienceLength = 2048

    /// An access token for the resource `audience`, from one sign-in (RFC 8707): the cached one
    /// while it outlives `minTTL`, else a new one from `refresher` (a refresh-token grant with
    /// `resource`), cached in the vault per audience until it expires and removed at sign-out.
    ///
    /// Single-flight like the session's own refresh: one request per audience in this process and,
    /// through the session lock, across processes. When the server rotates the refresh token in
    /// that answer, the new one is saved in the same write as the audience token (a refresh
    /// journal covers a crash in between, as for the main refresh).
    /// - Throws: `.invalidInput` for an empty or overlong audience; as `validCredentials(minTTL:refresher:)`.
    public func validCredentials(forAudience audience: String, minTTL: Duration = .zero,
                                 refresher: @escaping AudienceTokenRefresher) async throws -> Credentials {
        try await validCredentials(forAudience: audience, minTTL: minTTL, refreshLockWait: nil, refresher: refresher)
    }

    /// `validCredentials(forAudience:minTTL:refresher:)` waiting for another process's refresh up to
    /// `refreshLockWait` (at least `lockTimeout`).
    package func validCredentials(forAudience audience: String, minTTL: Duration, refreshLockWait: Duration?,
                                  refresher: @escaping AudienceTokenRefresher) async throws -> Credentials {
        try requireDeviceSession(.audienceTokens)
        guard !audience.isEmpty, audience.utf8.count <= Self.maximumAudienceLength,
              audience.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F }) else {
            throw VaultError(.invalidInput, "the audience must be 1 to \(Self.maximumAudienceLength) bytes without control characters")
        }
        let (user, _) = try currentCredentials()
        if let cached = try audienceCredentials(audience, owner: SessionNamespaces.user(user.id)), isValid(cached, minTTL: minTTL) {
            return cached
        }
        let fresh: Credentials
        if let running = audienceTasks[audience] {
            fresh = try await running.value
        } else {
            let task = Task { try await self.refreshAudience(audience, minTTL: minTTL, lockWait: refreshLockWait, refresher: refresher) }
            audienceTasks[audience] = task
            defer { audienceTasks[audience] = nil }
            fresh = try await task.value
        }
        try checkLifetime(of: fresh, satisfies: minTTL)
        return fresh
    }

    /// The names of an audience's records: the token (with its expiry) and its type and issue time.
    static func audienceRecordNames(_ audience: String) throws -> (token: String, info: String) {
        let digest = try SHA256.hash(Array(audience.utf8))
        let key = SessionNamespaces.Reserved.audiencePrefix + digest.prefix(16).hexString
        return (key + ".access-token", key + ".token-info")
    }

    /// The cached token for `audience`, or nil.
    func audienceCredentials(_ audience: String, owner: String) throws -> Credentials? {
        let names = try Self.audienceRecordNames(audience)
        let records = try device.records(named: [names.token, names.info], owner: owner)
        guard let token = records.first(where: { $0.metadata.name == names.token }) else { return nil }
        var info = CredentialRecords.TokenInfo(tokenType: "Bearer", scopes: [], issuedAtMilliseconds: nil)
        if let bytes = records.first(where: { $0.metadata.name == names.info })?.secret {
            info = (try? bytes.withUnsafeBytes { try JSONDecoder().decode(CredentialRecords.TokenInfo.self, from: Data($0)) }) ?? info
        }
        return Credentials(accessToken: token.secret, tokenType: info.tokenType, scopes: info.scopes, expiresAt: token.metadata.expiresAt,
                           issuedAt: info.issuedAtMilliseconds.map { Date(millisecondsSince1970: $0) })
    }

    private func refreshAudience(_ audience: String, minTTL: Duration, lockWait: Duration?,
                                 refresher: @escaping AudienceTokenRefresher) async throws -> Credentials {
        let lock = try await sessionLock(waitingForRefresh: false, timeout: lockWait)
        defer { lock.release() }
        // Another process may have fetched it (or refreshed the session) while we waited.
        let (user, latest) = try currentCredentials()
        let owner = SessionNamespaces.user(user.id)
        if let cached = try audienceCredentials(audience, owner: owner), isValid(cached, minTTL: minTTL) { return cached }
        guard let refreshToken = latest.refreshToken else {
            throw VaultError(.sessionExpired, "the session has no refresh token, so no token for another audience can be asked for",
                             fix: "sign in again")
        }
        let journal = RefreshJournal(journalID: try Self.randomHex(16), userID: user.id, startedAt: configuration.clock())
        try profiles.update { profile in profile.refreshInFlight = journal }
        let fresh: Credentials
        do {
            fresh = try await refresher(refreshToken, audience)
        } catch RefreshFailure.invalidGrant {
            logger.notice("refresh token rejected for an audience token; signing out", metadata: ["user": "\(user.id)"])
            try signOutLocked(newAnonymousID: false, expectedUserID: user.id, localData: configuration.localDataOnSignOut)
            publish(.guest(anonymousID: anonymousID ?? ""))
            throw VaultError(.sessionExpired, "the server rejected the refresh token (invalid_grant); signed out to guest",
                             fix: "sign in again")
        } catch {
            try? profiles.update { profile in
                if profile.refreshInFlight?.journalID == journal.journalID { profile.refreshInFlight = nil }
            }
            throw error
        }
        guard try profiles.load()?.user?.id == user.id else {
            throw VaultError(.notSignedIn, "'\(TerminalText.escaped(user.id))' signed out while the audience token was fetched",
                             fix: "sign in again")
        }
        // The session's own tokens stay; only a rotated refresh token replaces the old one.
        var session = latest
        if let rotated = fresh.refreshToken { session.refreshToken = rotated }
        let names = try Self.audienceRecordNames(audience)
        let info = try JSONEncoder().encode(CredentialRecords.TokenInfo(tokenType: fresh.tokenType, scopes: fresh.scopes,
                                                                         issuedAtMilliseconds: fresh.issuedAt?.millisecondsSince1970))
        let cached = Credentials(accessToken: fresh.accessToken, tokenType: fresh.tokenType, scopes: fresh.scopes,
                                 expiresAt: fresh.expiresAt, issuedAt: fresh.issuedAt)
        let extra = [NewEntry(name: names.token, owner: owner, secret: fresh.accessToken, kind: .accessToken,
                              expiresAt: fresh.expiresAt, transferable: false),
                     NewEntry(name: names.info, owner: owner, secret: SecureBytes(copying: info), transferable: false)]
        try saveRefreshed(session, owner: owner, marker: SecureBytes(copying: Array(journal.journalID.utf8)), extra: extra)
        try profiles.update { profile in
            if profile.refreshInFlight?.journalID == journal.journalID { profile.refreshInFlight = nil }
        }
        logger.info("token for an audience fetched", metadata: ["user": "\(user.id)"])
        return cached
    }
}
