import CredentialVault
import VaultCrypto

extension OAuthClient {
    /// Trades a refresh token for new tokens (RFC 6749 §6). No scope is sent, so the granted
    /// scopes stay as they were. A response without a refresh token keeps the old one when the
    /// session saves it. An ID token in the response must pass `verifyIDToken` (with a configured
    /// issuer; without one it is dropped), or the whole answer is refused.
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
        try await withinDeadline(configuration.refreshDeadline) {
            try await refreshWithinDeadline(refreshToken, resource: resource)
        }
    }

    private func refreshWithinDeadline(_ refreshToken: SecureBytes, resource: String?) async throws -> Credentials {
        let url = try await endpoint(\.token, "token endpoint")
        var form = FormBody()
        form.append("grant_type", "refresh_token")
        form.append("refresh_token", secret: refreshToken)
        if let resource { form.append("resource", resource) }
        let response = try await post(url, name: "token endpoint", form: form, retry: .onlyIfNotProcessed)
        var credentials = try Self.credentials(from: response, endpoint: "token endpoint \(Self.display(url))")
        // An ID token in the answer is verified like the first one, by the same verifier (OIDC
        // Core §12.2); the session then checks that it names the same issuer, subject and
        // audience. One that fails a check refuses the whole answer (`.verificationFailed`), and
        // one that cannot be checked now (the JWKS out of reach) fails it as transient: nothing is
        // saved and the session keeps its old tokens. Without a configured issuer there is no key
        // to check it with: it is dropped, never stored, and the session keeps its first one.
        if let idToken = credentials.idToken {
            if configuration.issuer == nil {
                credentials.idToken = nil
            } else {
                _ = try await verifyIDToken(idToken, accessToken: credentials.accessToken)
            }
        }
        return credentials
    }

    /// The refresher for `SessionManager.validCredentials(minTTL:refresher:)`: `invalid_grant`
    /// becomes `RefreshFailure.invalidGrant` (the session ends to guest); every other failure
    /// is thrown as its `OAuthError` and the session is kept.
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

    public var refresher: TokenRefresher {
        { [self] token in
            do {
                return try await refresh(token)
            } catch let error as OAuthError where error.kind == .invalidGrant {
                throw RefreshFailure.invalidGrant(description: error.serverErrorDescription)
            }
        }
    }
}
