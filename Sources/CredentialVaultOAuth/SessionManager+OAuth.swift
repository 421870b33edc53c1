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
    /// A refreshed ID token that cannot be checked now (the JWKS out of reach) is dropped with a
    /// warning in the log; the new tokens are saved and the session keeps its verified identity.
    /// - Throws: as `validCredentials(minTTL:refresher:)`; `OAuthError` for transient and
    ///   configuration failures (the session is kept).
    public func validCredentials(minTTL: Duration = .zero, client: OAuthClient) async throws -> Credentials {
        try await validCredentials(minTTL: minTTL, client: client, retryingRevocations: true, warning: nil)
    }

    /// `validCredentials(minTTL:client:)`, telling `warning` (instead of the log) that a refreshed
    /// ID token was dropped unchecked. Without `retryingRevocations` no pending revocation is tried
    /// afterwards: a command that exits once it has its token leaves no background task half-done.
    package func validCredentials(minTTL: Duration, client: OAuthClient, retryingRevocations: Bool,
                                  warning: (@Sendable (String) -> Void)?) async throws -> Credentials {
        let reached = ServerContact()
        let refresher = client.refresher(uncheckedIDToken: uncheckedIDTokenWarning(warning))
        let credentials = try await validCredentials(minTTL: minTTL, refreshLockWait: client.configuration.refreshBudget) { refreshToken in
            let fresh = try await refresher(refreshToken)
            reached.mark()
            return fresh
        }
        // Tried in the background: a slow revocation endpoint never delays the token the caller waits for.
        if retryingRevocations, reached.happened { Task { await self.retryPendingRevocations(client: client) } }
        return credentials
    }

    /// Where the word of a refreshed ID token dropped unchecked goes: `warning`, else the log.
    private func uncheckedIDTokenWarning(_ warning: (@Sendable (String) -> Void)?) -> @Sendable (OAuthError) -> Void {
        let logger = logger
        return { why in
            let text = "the refreshed ID token could not be checked (\(why)); the new tokens were saved without it, "
                + "and the session keeps the identity it had"
            if let warning { warning(text) } else { logger.warning("\(text)") }
        }
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

    /// Refreshes now through `client`, even when the access token is still valid. A refreshed ID
    /// token that cannot be checked now is dropped with a warning in the log, as in `validCredentials(minTTL:client:)`.
    public func refreshNow(client: OAuthClient) async throws -> Credentials {
        try await refreshNow(client: client, warning: nil)
    }

    /// `refreshNow(client:)`, telling `warning` (instead of the log) that a refreshed ID token was dropped unchecked.
    package func refreshNow(client: OAuthClient, warning: (@Sendable (String) -> Void)?) async throws -> Credentials {
        try await refreshNow(refreshLockWait: client.configuration.refreshBudget,
                             refresher: client.refresher(uncheckedIDToken: uncheckedIDTokenWarning(warning)))
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
    /// for a later try, and those kept earlier are tried again, as at sign-out.
    /// - Returns: what the server did, per user id whose session ended (empty when the profile
    ///   exists or the vault holds no session).
    /// - Throws: the store's errors (nothing is removed then).
    public func recoverFromMissingProfile(revokingWith client: OAuthClient) async throws -> [String: RevocationReport] {
        try await recoverFromMissingProfile(revokingWith: client, ending: { _ in })
    }

    /// `recoverFromMissingProfile(revokingWith:)`, telling `ending` each user id before its tokens
    /// are revoked and `ended` what the server did with them, user after user.
    package func recoverFromMissingProfile(revokingWith client: OAuthClient, ending: @Sendable (String) -> Void,
                                           ended: @Sendable (String, RevocationReport) -> Void = { _, _ in })
        async throws -> [String: RevocationReport] {
        var reports: [String: RevocationReport] = [:]
        _ = try await recoverFromMissingProfile { userID, credentials in
            ending(userID)
            let report = await revokeRemoved(credentials, client: client)
            reports[userID] = report
            ended(userID, report)
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

    /// Revokes what a sign-out removed, then tries the pending ones (whether or not the first
    /// revocation failed: a server that refused one token may take the others), then keeps what
    /// failed now (after the retry, so that it is not tried twice in one call).
    private func revokeRemoved(_ removed: Credentials?, client: OAuthClient) async -> RevocationReport {
        var report = if let removed { await client.revokeAll(removed) } else { RevocationReport(outcome: .nothingToRevoke, revoked: []) }
        report.earlier = await retryPendingRevocations(client: client).earlier
        guard let removed, case .failed = report.outcome else { return report }
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
            report.couldNotKeep = true
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
    /// Where this client's tokens are revoked, as a pending revocation names it (`PendingRevocation.server(issuer:revocationEndpoint:)`).
    var revocationServer: String {
        PendingRevocation.server(issuer: configuration.issuer, revocationEndpoint: configuration.endpoints.revocation)
    }

    /// Whether `pending` was issued by this client's server to this client.
    func owns(_ pending: PendingRevocation) -> Bool {
        !pending.server.isEmpty && pending.server == revocationServer && pending.clientID == configuration.clientID
    }
}
