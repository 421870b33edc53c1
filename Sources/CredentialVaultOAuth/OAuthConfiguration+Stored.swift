import CredentialVault
import FoundationEssentials
import VaultCrypto

extension OAuthConfiguration {
    /// The configuration of a client stored in the vault (`StoredClientConfiguration`), with its
    /// secret and DPoP key as sealed beside it.
    /// - Parameters:
    ///   - caBundle: the CA bundle's bytes, already checked against the stored SHA-256.
    ///   - requestTimeout: the deadline of one exchange with the server.
    /// - Throws: `.invalidInput` for a stored endpoint that is not a URL; `.notFound` when the
    ///   method needs a secret, or the client binds with DPoP, and the sealed value is missing.
    package init(stored: StoredClientConfiguration, secret: SecureBytes?, dpopKey: SecureBytes?, caBundle: [UInt8]?,
                 requestTimeout: Duration) throws {
        func url(_ text: String?, _ what: String) throws -> URL? {
            guard let text else { return nil }
            guard let url = URL(string: text), url.scheme != nil, url.host != nil else {
                throw VaultError(.invalidInput, "the stored \(what) '\(text)' is not a URL", fix: "store the client again with 'vault client'")
            }
            return url
        }
        guard let authentication = ClientAuthentication(method: stored.authMethod, secret: secret) else {
            throw VaultError(.notFound, "the stored client's secret is missing", fix: "store the client again with 'vault client'")
        }
        self.init(issuer: try url(stored.issuer, "issuer"),
                  endpoints: OAuthEndpoints(token: try url(stored.tokenEndpoint, "token endpoint"),
                                            revocation: try url(stored.revocationEndpoint, "revocation endpoint"),
                                            deviceAuthorization: try url(stored.deviceEndpoint, "device endpoint"),
                                            authorization: try url(stored.authorizationEndpoint, "authorization endpoint")),
                  clientID: stored.clientID, authentication: authentication, scopes: stored.scopes,
                  caBundlePath: stored.caBundle, requestTimeout: requestTimeout)
        caBundlePEM = caBundle
        if stored.dpop {
            guard let dpopKey else {
                throw VaultError(.notFound, "the stored client binds its tokens with DPoP, but its key is missing",
                                 fix: "store the client again with 'vault client --dpop', or sign in again with --dpop")
            }
            self.dpopKey = try P256SigningKey(rawRepresentation: dpopKey)
        }
    }
}
