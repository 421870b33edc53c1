import FoundationEssentials

/// The server's endpoints. Each one set here overrides what discovery finds.
public struct OAuthEndpoints: Sendable, Hashable {
    /// The token endpoint (RFC 6749 §3.2).
    public var token: URL?
    /// The revocation endpoint (RFC 7009); without one, sign-out only wipes locally.
    public var revocation: URL?
    /// The device authorization endpoint (RFC 8628 §3.1).
    public var deviceAuthorization: URL?
    /// The OpenID Connect userinfo endpoint, used for the user id when no ID token came.
    public var userinfo: URL?
    /// The authorization endpoint (RFC 6749 §3.1), where the browser sign-in sends the user.
    public var authorization: URL?
    /// The issuer's JWK Set (`jwks_uri`), with the keys that sign its ID tokens.
    public var jwks: URL?

    /// Creates endpoints; nil ones come from discovery.
    public init(token: URL? = nil, revocation: URL? = nil, deviceAuthorization: URL? = nil, userinfo: URL? = nil,
                authorization: URL? = nil, jwks: URL? = nil) {
        self.token = token
        self.revocation = revocation
        self.deviceAuthorization = deviceAuthorization
        self.userinfo = userinfo
        self.authorization = authorization
        self.jwks = jwks
    }

    /// These endpoints, with the ones missing here taken from `other`.
    func filling(from other: OAuthEndpoints) -> OAuthEndpoints {
        OAuthEndpoints(token: token ?? other.token, revocation: revocation ?? other.revocation,
                       deviceAuthorization: deviceAuthorization ?? other.deviceAuthorization,
                       userinfo: userinfo ?? other.userinfo, authorization: authorization ?? other.authorization,
                       jwks: jwks ?? other.jwks)
    }
}
