import FoundationEssentials
import VaultCrypto

/// The tokens of a signed-in session, as an OAuth 2.0 server issued them.
///
/// Token bytes live in zeroising `SecureBytes`; `description`, `debugDescription` and
/// `dump` show the token type, expiry and which tokens are present, never the tokens.
public struct Credentials: Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The access token presented to resource servers.
    public var accessToken: SecureBytes
    /// The refresh token used to get new access tokens, if the server issued one.
    public var refreshToken: SecureBytes?
    /// The OpenID Connect ID token, if the server issued one.
    public var idToken: SecureBytes?
    /// The token type, usually "Bearer" (compared case-insensitively by servers).
    public var tokenType: String
    /// The granted scopes; empty when the server did not say (RFC 6749 §5.1: then they
    /// are the scopes that were requested).
    public var scopes: [String]
    /// When the access token expires.
    ///
    /// `nil` means no expiry is known: the server sent no `expires_in`/`expires_at` and the
    /// access token is not a JWT with an `exp` claim. Such a token is treated as valid until
    /// a server rejects it: the session loader reports these credentials as signed in, and
    /// `validCredentials(minTTL:)` returns them as they are, without refreshing.
    public var expiresAt: Date?
    /// When the access token was received, if known. With `expiresAt` it gives the token's
    /// lifetime, which caps the session's leeway at half of it (`SessionConfiguration.leeway`).
    public var issuedAt: Date?

    /// Creates credentials.
    public init(accessToken: SecureBytes, refreshToken: SecureBytes? = nil, idToken: SecureBytes? = nil,
                tokenType: String = "Bearer", scopes: [String] = [], expiresAt: Date? = nil, issuedAt: Date? = nil) {
        self.accessToken = accessToken
        self.refreshToken = refreshToken
        self.idToken = idToken
        self.tokenType = tokenType
        self.scopes = scopes
        self.expiresAt = expiresAt
        self.issuedAt = issuedAt
    }

    /// "Credentials(Bearer, expires 2026-01-31T08:15:00.000Z, refresh token: yes, id token: no,
    /// scopes: openid profile)". Never shows token bytes.
    public var description: String {
        let expiry: String
        if let expiresAt {
            expiry = "expires " + (ISO8601Timestamp.string(from: expiresAt) ?? "at a date outside years 1–9999")
        } else {
            expiry = "no expiry known"
        }
        let scopeText = scopes.isEmpty ? "not stated" : scopes.joined(separator: " ")
        return "Credentials(\(tokenType), \(expiry), refresh token: \(refreshToken == nil ? "no" : "yes"), "
            + "id token: \(idToken == nil ? "no" : "yes"), scopes: \(scopeText))"
    }

    /// Same as `description`.
    public var debugDescription: String { description }
}
