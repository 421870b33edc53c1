import CredentialVault
import FoundationEssentials
import NIOHTTP1
import VaultCrypto

extension OAuthClient {
    /// Verifies an ID token from this client's issuer (OpenID Connect Core §3.1.3.7): the
    /// signature with the issuer's JWKS (`jwks_uri`), chosen by `kid` and fetched again once when
    /// the `kid` is unknown (key rotation); then `iss`, `aud`/`azp`, `exp`, `iat`, `nonce`,
    /// `at_hash`, and for a refreshed token the first one's `iss`, `sub` and `aud`.
    /// - Parameters:
    ///   - token: the ID token.
    ///   - nonce: the nonce sent in the authorization request (code flow), which the token must carry.
    ///   - accessToken: the access token issued with it, for `at_hash`.
    ///   - previous: the session's first ID token, when this one comes from a refresh.
    /// - Returns: who the token says the user is.
    /// - Throws: `OAuthError` `.verificationFailed` naming the check that failed; `.configuration`
    ///   when no issuer is configured or it publishes no JWKS; transport errors as usual.
    public func verifyIDToken(_ token: SecureBytes, nonce: String? = nil, accessToken: SecureBytes? = nil,
                              previous: VerifiedIDToken? = nil) async throws -> VerifiedIDToken {
        guard configuration.issuer != nil else {
            throw OAuthError(.configuration, endpoint: "ID token",
                             detail: "no issuer is configured, so the ID token's signature cannot be checked")
        }
        let issuer = try await metadata().issuer
        let expectations = IDTokenExpectations(issuer: issuer, clientID: configuration.clientID, nonce: nonce,
                                               accessToken: accessToken, previous: previous)
        return try await IDTokenVerifier.verify(token, expectations: expectations) { keyID, algorithm in
            try await signingKeys(keyID: keyID, algorithm: algorithm)
        }
    }

    /// Verifies the ID token of `credentials`, when there is one.
    /// - Returns: the verified token, or nil when the server sent none.
    public func verifiedIdentity(of credentials: Credentials, nonce: String? = nil,
                                 previous: VerifiedIDToken? = nil) async throws -> VerifiedIDToken? {
        guard let idToken = credentials.idToken else { return nil }
        return try await verifyIDToken(idToken, nonce: nonce, accessToken: credentials.accessToken, previous: previous)
    }

    /// The keys that may have signed a token with `keyID` and `algorithm`: from the cached JWKS,
    /// else from a fresh fetch (the issuer may have rotated its keys). One fetch at most per call.
    func signingKeys(keyID: String?, algorithm: JWSAlgorithm) async throws -> [JSONWebKeySet.Key] {
        if let cached = fetchedKeys.withLock({ $0 }) {
            let found = cached.candidates(keyID: keyID, algorithm: algorithm)
            if !found.isEmpty { return found }
        }
        let fresh = try await fetchKeySet()
        fetchedKeys.withLock { $0 = fresh }
        return fresh.candidates(keyID: keyID, algorithm: algorithm)
    }

    /// GETs the issuer's JWK Set.
    func fetchKeySet() async throws -> JSONWebKeySet {
        let url = try await endpoint(\.jwks, "JWKS")
        let response = try await exchange(url, name: "JWKS", method: .GET, headers: HTTPHeaders(), body: nil, retry: .idempotent)
        guard let set = JSONWebKeySet.parse(response.body) else {
            throw OAuthError(.transient, endpoint: "JWKS \(Self.display(url))", status: response.status,
                             detail: "the answer is not a JWK Set")
        }
        return set
    }
}
