/// How an OAuth client authenticates at the token endpoint (RFC 6749 §2.3, OIDC Core §9).
package enum ClientAuthMethod: String, Sendable, CaseIterable {
    /// A public client: no secret.
    case none
    /// The secret in an `Authorization: Basic` header.
    case clientSecretBasic = "client_secret_basic"
    /// The secret in the form body.
    case clientSecretPost = "client_secret_post"

    /// Whether the method sends a client secret (which is then kept in the vault).
    package var sendsSecret: Bool { self != .none }
}

/// How `vault token` gets a token for a stored client.
package enum ClientGrant: String, Sendable, CaseIterable {
    /// A user signed in; the token is refreshed with the refresh token (RFC 6749 §6).
    case refreshToken = "refresh_token"
    /// A daemon: the client fetches a token for itself (RFC 6749 §4.4).
    case clientCredentials = "client_credentials"
}
