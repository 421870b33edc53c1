import CredentialVault
import FoundationEssentials
import Synchronization
import VaultCrypto

extension SessionManager {
    /// Credentials valid for at least `minTTL`, refreshed through `client` when needed, with
    /// the session's single-flight refresh and atomic save.
    ///
    /// A process that finds another one refreshing waits for it up to the client's whole refresh
    /// budget (`OAuthConfiguration.refreshBudget`), never less than the session's `lockTimeout`:
    /// so waiters outlast a slow refresh instead of failing with `busy` first. After a refresh
    /// that reached the server, tokens whose revocation failed earlier are tried again.
    /// - Throws: as `validCredentials(minTTL:refresher:)`; `OAuthError` for transient and
    ///   configuration failures (the session is kept).
    public func validCredentials(minTTL: Duration = .zero, client: OAuthClient) async throws -> Credentials {
        let reached = ServerContact()
        let credentials = try await validCredentials(minTTL: minTTL, refreshLockWait: client.configuration.refreshBudget) { refreshToken in
            let fresh = try await client.refresher(refreshToken)
            reached.mark()
            return fresh
        }
        // Tried in the background: a slow revocation endpoint never delays the token the caller waits for.
        if reached.happened { Task { await self.retryPendingRevocations(client: client) } }
        return credentials
    }

    /// The one call at launch (and before a request): valid credentials, refreshed silently
    /// through `client` when needed, or one error that says what the app must show.
    ///
    /// A user who still needs onboarding gets credentials (onboarding is the app's own screen).
    /// When the server cannot be reached, a token that is still valid now is returned even if it
    /// does not last `minTTL`; only without one is `.offline` thrown.
    /// - Parameter minTTL: How long the access token must stay valid (on top of the leeway).
    /// - Throws: `SessionCredentialsError`: `.signInRequired` (a guest, or a session that can no
    ///   longer be renewed: it has ended), `.offline`, `.unavailable`; `OAuthError` for a
    ///   misconfigured client; `VaultError` (`.minTTLTooLarge`, `.busy`).
    public func credentials(minTTL: Duration = .zero, client: OAuthClient) async throws -> Credentials {
        switch await restore(minTTL: minTTL, refreshLockWait: client.configuration.refreshBudget) {
        case let .signedIn(_, credentials), let .needsOnboarding(_, credentials):
            return credentials
        case .guest:
            throw SessionCredentialsError.signInRequired(returning: nil)
        case let .unavailable(why):
            throw SessionCredentialsError.unavailable(why)
        case let .expired(user, _, expiresAt):
            do {
                return try await validCredentials(minTTL: minTTL, client: client)
            } catch let error as VaultError where error.code == .sessionExpired || error.code == .notSignedIn {
                // Ended, so that the sign-in the app now shows is not refused as "already signed in"
                // (a session whose tokens are gone ends here; a rejected refresh has ended already).
                let stillNamed = await peek().user?.id
                if stillNamed == user.id { _ = try? await signOut() }
                throw SessionCredentialsError.signInRequired(returning: user)
            } catch let error as OAuthError where error.isTransient {
                if let (_, stored) = try? currentCredentials(), isValid(stored, minTTL: .zero) { return stored }
                throw SessionCredentialsError.offline(stillValidUntil: expiresAt)
            } catch let unavailable as SessionUnavailable {
                throw SessionCredentialsError.unavailable(unavailable)
            }
        }
    }

    /// An access token for the resource `audience` (RFC 8707) through `client`, as
    /// `validCredentials(forAudience:minTTL:refresher:)` with the client's `audienceRefresher`.
    /// - Throws: as `validCredentials(forAudience:minTTL:refresher:)`.
    public func validCredentials(forAudience audience: String, minTTL: Duration = .zero, client: OAuthClient) async throws -> Credentials {
        try await validCredentials(forAudience: audience, minTTL: minTTL, refreshLockWait: client.configuration.refreshBudget,
                                   refresher: client.audienceRefresher)
    }

    /// Refreshes now through `client`, even when the access token is still valid.
    public func refreshNow(client: OAuthClient) async throws -> Credentials {
        try await refreshNow(refreshLockWait: client.configuration.refreshBudget, refresher: client.refresher)
    }

    /// Signs out locally first (never blocked by the network), then revokes the tokens at the
    /// server (RFC 7009). Tokens whose revocation fails are kept sealed in the vault and tried
    /// again by the next call that reaches the server with a client of the same server and id
    /// (`retryPendingRevocations(client:)`; at most 16 tokens, none older than 30 days).
    /// - Parameters:
    ///   - client: The client the tokens were issued to.
    ///   - localData: What happens to the user's items (nil: `SessionConfiguration.localDataOnSignOut`).
    ///   - newAnonymousID: Give the guest a new anonymous id (the old guest's items are removed).
    ///   - resetSettings: Also reset the settings to their registered defaults.
    /// - Returns: what the server did; the local wipe has happened whatever it says.
    /// - Throws: only local failures, as `signOut(localData:newAnonymousID:resetSettings:)`.
    public func signOut(revokingWith client: OAuthClient, localData: LocalDataPolicy? = nil, newAnonymousID: Bool = false,
                        resetSettings: Bool = false) async throws -> RevocationReport {
        let removed = try await signOut(localData: localData, newAnonymousID: newAnonymousID, resetSettings: resetSettings)
        return await revokeRemoved(removed, client: client)
    }

    /// The "skip" button that also revokes: becomes a guest (default settings, no guest items) and,
    /// when someone was signed in, revokes their tokens at the server as `signOut(revokingWith:)` does.
    /// - Returns: the anonymous id and what the server did.
    public func enterGuestMode(resetAnonymousID: Bool = false, revokingWith client: OAuthClient) async throws -> GuestModeReport {
        let (anonymousID, removed) = try await enterGuestModeSigningOut(resetAnonymousID: resetAnonymousID)
        return GuestModeReport(anonymousID: anonymousID, revocation: await revokeRemoved(removed, client: client))
    }

    /// Ends the sessions of a vault whose profile is missing (`SessionUnavailable.Reason.profileMissing`),
    /// revoking each user's tokens through `client` first; tokens whose revocation fails are kept
    /// for a later try, as at sign-out.
    /// - Returns: what the server did, per user id whose session ended (empty when the profile
    ///   exists or the vault holds no session).
    /// - Throws: the store's errors (nothing is removed then).
    public func recoverFromMissingProfile(revokingWith client: OAuthClient) async throws -> [String: RevocationReport] {
        try await recoverFromMissingProfile(revokingWith: client, ending: { _ in })
    }

    /// `recoverFromMissingProfile(revokingWith:)`, telling `ending` each user id before its tokens are revoked.
    package func recoverFromMissingProfile(revokingWith client: OAuthClient,
                                           ending: @Sendable (String) -> Void) async throws -> [String: RevocationReport] {
        var reports: [String: RevocationReport] = [:]
        var failed: [(String, Credentials, RevocationReport)] = []
        _ = try await recoverFromMissingProfile { userID, credentials in
            ending(userID)
            let report = await client.revokeAll(credentials)
            reports[userID] = report
            if case .failed = report.outcome { failed.append((userID, credentials, report)) }
        }
        for (userID, credentials, report) in failed {
            reports[userID] = await keepFailedRevocations(of: credentials, report: report, client: client)
        }
        return reports
    }

    /// Tries again to revoke the tokens whose revocation failed before and that belong to `client`'s
    /// server and id; each one revoked is forgotten, the others wait for the next try.
    /// - Returns: what the server did (`.nothingToRevoke` when none was waiting).
    @discardableResult
    public func retryPendingRevocations(client: OAuthClient) async -> RevocationReport {
        guard let pending = try? await pendingRevocations().filter({ client.owns($0) }), !pending.isEmpty else {
            return RevocationReport(outcome: .nothingToRevoke, revoked: [])
        }
        var revoked: [String] = [], done: [String] = [], failures: [OAuthError] = []
        for token in pending {
            do {
                try await client.revoke(token.token, hint: token.hint)
                revoked.append(token.hint)
                done.append(token.id)
            } catch let error as OAuthError {
                failures.append(error)
            } catch {
                failures.append(OAuthError(.transient, endpoint: "revocation endpoint", detail: "\(type(of: error))"))
            }
        }
        try? await forgetPendingRevocations(done)
        var report = RevocationReport(outcome: failures.isEmpty ? .revoked : .failed(failures), revoked: revoked)
        report.earlier = RevocationReport.EarlierRevocations(revoked: done.count, tried: pending.count)
        return report
    }

    /// Revokes what a sign-out removed; keeps what failed; then tries the pending ones.
    private func revokeRemoved(_ removed: Credentials?, client: OAuthClient) async -> RevocationReport {
        guard let removed else {
            var report = RevocationReport(outcome: .nothingToRevoke, revoked: [])
            report.earlier = await retryPendingRevocations(client: client).earlier
            return report
        }
        var report = await client.revokeAll(removed)
        guard case .failed = report.outcome else {
            report.earlier = await retryPendingRevocations(client: client).earlier
            return report
        }
        return await keepFailedRevocations(of: removed, report: report, client: client)
    }

    /// Keeps the tokens of `credentials` that `report` does not list as revoked; returns `report`
    /// with how many were kept.
    private func keepFailedRevocations(of credentials: Credentials, report: RevocationReport, client: OAuthClient) async -> RevocationReport {
        var report = report
        do {
            report.keptForLater = try await keepUnrevoked(credentials, revoked: report.revoked, server: client.revocationServer,
                                                          clientID: client.configuration.clientID)
        } catch {
            logger.warning("could not keep the tokens whose revocation failed", metadata: ["error": "\(type(of: error))"])
        }
        return report
    }
}

/// What `enterGuestMode(resetAnonymousID:revokingWith:)` did.
public struct GuestModeReport: Sendable {
    /// The guest's anonymous id.
    public let anonymousID: String
    /// What the server did with the signed-out user's tokens (`.nothingToRevoke` when nobody was signed in).
    public let revocation: RevocationReport
}

/// What `SessionManager.credentials(minTTL:client:)` throws: what the app must show instead.
public enum SessionCredentialsError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Show the sign-in: nobody is signed in (`returning` nil), or the session of `returning` could
    /// not be renewed and has ended (the app is a guest again).
    case signInRequired(returning: User?)
    /// The server cannot be reached and no valid token is stored; `stillValidUntil` is the stored
    /// token's expiry (past, or within the leeway), nil when unknown. The session is kept.
    case offline(stillValidUntil: Date?)
    /// The vault is locked, corrupt, unreadable, busy, or its profile is missing: never "signed out".
    case unavailable(SessionUnavailable)

    /// One line for a log; never a token.
    public var description: String {
        switch self {
        case .signInRequired(nil): "sign-in required: nobody is signed in"
        case let .signInRequired(user?): "sign-in required: the session of '\(TerminalText.escaped(user.id))' has ended"
        case let .offline(until): "offline: the server cannot be reached" + (until.map { " (the token expired at \($0))" } ?? "")
        case let .unavailable(why): "the session is unavailable: \(why.reason.rawValue)"
        }
    }

    public static func == (lhs: SessionCredentialsError, rhs: SessionCredentialsError) -> Bool {
        switch (lhs, rhs) {
        case let (.signInRequired(a), .signInRequired(b)): a?.id == b?.id
        case let (.offline(a), .offline(b)): a == b
        case let (.unavailable(a), .unavailable(b)): a.reason == b.reason
        default: false
        }
    }
}

/// Whether a refresher reached the server (a fresh pair came back).
private final class ServerContact: Sendable {
    private let flag = Mutex(false)
    func mark() { flag.withLock { $0 = true } }
    var happened: Bool { flag.withLock { $0 } }
}

extension OAuthClient {
    /// Where this client's tokens are revoked, as a pending revocation names it: the issuer, else the revocation endpoint.
    var revocationServer: String {
        configuration.issuer?.absoluteString ?? configuration.endpoints.revocation?.absoluteString ?? ""
    }

    /// Whether `pending` was issued by this client's server to this client.
    func owns(_ pending: PendingRevocation) -> Bool {
        !pending.server.isEmpty && pending.server == revocationServer && pending.clientID == configuration.clientID
    }
}
