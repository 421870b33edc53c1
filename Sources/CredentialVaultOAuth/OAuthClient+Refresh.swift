import CredentialVault
import VaultCrypto

extension OAuthClient {
    /// Trades a refresh token for new tokens (RFC 6749 §6). No scope is sent, so the granted
    /// scopes stay as they were. A response without a refresh token keeps the old one when the
    /// session saves it. An ID token in the response that fails a check of `verifyIDToken`
    /// refuses the whole answer; one that cannot be checked now (the JWKS or discovery out of
    /// reach, the refresh's deadline run out) is dropped and the rest of the answer kept, since the
    /// server may have rotated the refresh token already. Without a configured issuer it is dropped.
    /// - Throws: `OAuthError` (`.invalidGrant` when the refresh token is dead; `.verificationFailed`
    ///   for a refused ID token).
    public func refresh(_ refreshToken: SecureBytes) async throws -> Credentials {
        try await refresh(refreshToken, resource: nil)
    }

    /// A refresh-token grant for an access token meant for `resource` (RFC 8707 §2.2): the
    /// session's own tokens are not replaced by it (`SessionManager.validCredentials(forAudience:)`).
    ///
    /// The refresh as a whole, discovery and the JWKS fetch included, ends within the
    /// configuration's `refreshDeadline`, the time the session's waiters allow it
    /// (`refreshBudget`): a request still running then is cut short, as a transient failure.
    /// - Throws: as `refresh(_:)`.
    public func refresh(_ refreshToken: SecureBytes, resource: String?) async throws -> Credentials {
        try await checkedRefresh(refreshToken, resource: resource).credentials
    }

    /// What a refresh brought: the credentials, and why the answer's ID token was dropped unchecked.
    struct CheckedRefresh: Sendable {
        var credentials: Credentials
        /// Why the ID token could not be checked (it is not in `credentials`), or nil.
        var uncheckedIDToken: OAuthError?
    }

    /// `refresh(_:resource:)`, telling why an ID token was dropped unchecked.
    func checkedRefresh(_ refreshToken: SecureBytes, resource: String?) async throws -> CheckedRefresh {
        try await withinDeadline(configuration.refreshDeadline) {
            try await refreshWithinDeadline(refreshToken, resource: resource)
        }
    }

    private func refreshWithinDeadline(_ refreshToken: SecureBytes, resource: String?) async throws -> CheckedRefresh {
        let url = try await endpoint(\.token, "token endpoint")
        var form = FormBody()
        form.append("grant_type", "refresh_token")
        form.append("refresh_token", secret: refreshToken)
        if let resource { form.append("resource", resource) }
        let response = try await post(url, name: "token endpoint", form: form, retry: .onlyIfNotProcessed)
        var credentials = try Self.credentials(from: response, endpoint: "token endpoint \(Self.display(url))")
        // An ID token in the answer is verified like the first one, by the same verifier (OIDC
        // Core §12.2); the session then checks that it names the same issuer, subject and
        // audience. One that fails a check refuses the whole answer (`.verificationFailed`, issue
        // 36.7). One that cannot be checked now (the JWKS or discovery out of reach, the deadline
        // run out after the token endpoint answered) is dropped, never stored, and the rest kept:
        // the server has rotated the refresh token already, and throwing the new one away would
        // end the session at the next refresh. The session then keeps its verified identity.
        // Without a configured issuer there is no key to check it with: dropped likewise.
        var unchecked: OAuthError?
        if let idToken = credentials.idToken {
            if configuration.issuer == nil {
                credentials.idToken = nil
            } else {
                do {
                    _ = try await verifyIDToken(idToken, accessToken: credentials.accessToken)
                } catch let error as OAuthError where error.kind != .verificationFailed {
                    credentials.idToken = nil
                    unchecked = error
                }
            }
        }
        return CheckedRefresh(credentials: credentials, uncheckedIDToken: unchecked)
    }

    /// The refresher for `SessionManager.validCredentials(forAudience:minTTL:refresher:)`:
    /// `refresh(_:resource:)` with `invalid_grant` as `RefreshFailure.invalidGrant`.
    public var audienceRefresher: AudienceTokenRefresher {
        { [self] token, audience in
            do {
                return try await refresh(token, resource: audience)
            } catch let error as OAuthError where error.kind == .invalidGrant {
                throw RefreshFailure.invalidGrant(description: error.serverErrorDescription)
            }
        }
    }

    /// The refresher for `SessionManager.validCredentials(minTTL:refresher:)` and
    /// `refreshNow(refresher:)`: `refresh(_:)`, with `invalid_grant` as `RefreshFailure.invalidGrant`
    /// (the session ends to guest); every other failure is thrown as its `OAuthError` and the
    /// session is kept.
    public var refresher: TokenRefresher {
        refresher(uncheckedIDToken: { _ in })
    }

    /// `refresher`, telling `uncheckedIDToken` why an answer's ID token was dropped unchecked.
    func refresher(uncheckedIDToken: @escaping @Sendable (OAuthError) -> Void) -> TokenRefresher {
        { [self] token in
            do {
                let checked = try await checkedRefresh(token, resource: nil)
                if let why = checked.uncheckedIDToken { uncheckedIDToken(why) }
                return checked.credentials
            } catch let error as OAuthError where error.kind == .invalidGrant {
                throw RefreshFailure.invalidGrant(description: error.serverErrorDescription)
            }
        }
    }
}
