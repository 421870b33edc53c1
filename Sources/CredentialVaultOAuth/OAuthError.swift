/// A failure talking to the authorization server, classified by what the app should do
/// (RFC 6749 §5.2). It names the endpoint and, sanitised, the server's `error` and
/// `error_description`; it never contains a token or a client secret.
public struct OAuthError: Error, Sendable, CustomStringConvertible {
    /// What the app should do about it.
    public enum Kind: String, Sendable, Hashable {
        /// The grant (refresh token, device code) is dead: the user must sign in again.
        case invalidGrant
        /// The client is misconfigured or not allowed (`invalid_client`, `unauthorized_client`,
        /// `unsupported_grant_type`, `invalid_scope`, `invalid_request`, a 4xx without an OAuth
        /// error, a missing endpoint). Retrying cannot help; the session is kept.
        case configuration
        /// Worth trying again later: 5xx, 429, timeouts, refused connections, malformed bodies.
        /// The session is kept.
        case transient
        /// The user said no (RFC 8628 `access_denied`).
        case accessDenied
        /// The device code expired before the user approved it (RFC 8628 `expired_token`).
        case expiredToken
        /// An endpoint is plain `http` on a non-loopback host.
        case insecureEndpoint
        /// A check of the server's answer failed: an ID token's signature or claims, the `iss` of
        /// an authorization response (RFC 9207), a `state` or `nonce`. Nothing was stored.
        case verificationFailed
    }

    /// What the app should do about it.
    public let kind: Kind
    /// Which endpoint: "token endpoint http://127.0.0.1:8000/o/token/".
    public let endpoint: String
    /// The HTTP status, when a response came.
    public let status: Int?
    /// The server's `error` code, sanitised.
    public let serverError: String?
    /// The server's `error_description`, sanitised.
    public let serverErrorDescription: String?
    /// What happened, in our words.
    public let detail: String
    /// The server's `Retry-After`, when it sent one.
    public let retryAfter: Duration?

    init(_ kind: Kind, endpoint: String, status: Int? = nil, serverError: String? = nil,
         serverErrorDescription: String? = nil, detail: String, retryAfter: Duration? = nil) {
        self.kind = kind
        self.endpoint = endpoint
        self.status = status
        self.serverError = serverError.map(ServerText.sanitized)
        self.serverErrorDescription = serverErrorDescription.map(ServerText.sanitized)
        self.detail = detail
        self.retryAfter = retryAfter
    }

    /// True when the session should be kept and the call tried again later.
    public var isTransient: Bool { kind == .transient }

    /// "token endpoint http://…/token/: invalid_client: Client authentication failed (HTTP 401; configuration)".
    public var description: String {
        var text = "\(endpoint): "
        if let serverError {
            text += serverError
            if let serverErrorDescription { text += ": " + serverErrorDescription }
        } else {
            text += detail
        }
        var notes: [String] = []
        if let status { notes.append("HTTP \(status)") }
        notes.append(kind.rawValue)
        if let retryAfter { notes.append("retry after \(RetryPolicy.seconds(retryAfter)) s") }
        return text + " (" + notes.joined(separator: "; ") + ")"
    }
}
