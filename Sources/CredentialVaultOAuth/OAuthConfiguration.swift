import CredentialVault
import FoundationEssentials
import VaultCrypto

/// Everything an `OAuthClient` needs to know about the server and itself.
public struct OAuthConfiguration: Sendable {
    /// The issuer URL; discovery reads its metadata. Optional when every endpoint is set.
    public var issuer: URL?
    /// Endpoints that override discovery.
    public var endpoints: OAuthEndpoints
    /// The client id.
    public var clientID: String
    /// How the client authenticates.
    public var authentication: ClientAuthentication
    /// Scopes requested at device sign-in and client credentials (a refresh asks for none,
    /// which keeps the granted ones, RFC 6749 §6).
    public var scopes: [String]
    /// A PEM file of CA certificates to trust instead of the system store (private issuers).
    public var caBundlePath: String?
    /// The PEM bytes of CA certificates to trust instead of the system store; wins over
    /// `caBundlePath`. For a caller that read and checked the bundle itself (the `vault` command
    /// compares its SHA-256 with the one it sealed): what was checked is exactly what is trusted.
    public var caBundlePEM: [UInt8]?
    /// The deadline of one HTTP exchange.
    public var requestTimeout: Duration
    /// Retries of transient failures.
    public var retry: RetryPolicy
    /// The DPoP key (RFC 9449): when set, every token request carries a proof made with it, so
    /// the tokens are bound to it. Keep it sealed (`P256SigningKey.rawRepresentation`).
    public var dpopKey: P256SigningKey?
    /// Allow plain `http` to non-loopback hosts. Only for tests of this package; off by default.
    package var allowInsecureHTTP = false

    /// The time one refresh's requests may take in all: discovery, the token request and the JWKS
    /// fetch for its ID token together end by then (`OAuthClient.refresh` stops the one in
    /// progress). As long as one request's every attempt to its deadline and the longest waits
    /// between them (`Retry-After` at its cap, else the backoff cap): 3 × 10 s + 2 × 30 s = 90 s.
    public var refreshDeadline: Duration {
        let attempts = max(1, retry.maximumAttempts)
        return requestTimeout * attempts + max(retry.maximumDelay, retry.maximumRetryAfter) * (attempts - 1)
    }

    /// The longest one refresh through this configuration can take: its requests
    /// (`refreshDeadline`) and 5 s of margin for saving what it got. The one place the session's
    /// waiters derive their lock wait from (defaults: 90 s + 5 s = 95 s).
    public var refreshBudget: Duration {
        refreshDeadline + .seconds(5)
    }

    /// Creates a configuration.
    public init(issuer: URL?, endpoints: OAuthEndpoints = OAuthEndpoints(), clientID: String,
                authentication: ClientAuthentication = .none, scopes: [String] = [], caBundlePath: String? = nil,
                requestTimeout: Duration = .seconds(10), retry: RetryPolicy = RetryPolicy(), dpopKey: P256SigningKey? = nil) {
        self.dpopKey = dpopKey
        self.issuer = issuer
        self.endpoints = endpoints
        self.clientID = clientID
        self.authentication = authentication
        self.scopes = scopes
        self.caBundlePath = caBundlePath
        self.requestTimeout = requestTimeout
        self.retry = retry
    }

    /// `https`, or `http` to a loopback address (127.0.0.0/8 or ::1 as a strict IP literal, or `localhost`).
    static func isAcceptable(_ url: URL, allowInsecure: Bool) -> Bool {
        guard let scheme = url.scheme?.lowercased(), url.host != nil else { return false }
        if scheme == "https" { return true }
        guard scheme == "http" else { return false }
        return allowInsecure || isLoopback(url.host ?? "")
    }

    /// Loopback as `LoopbackHost` decides it (a strict IP literal, or exactly `localhost`).
    static func isLoopback(_ host: String) -> Bool {
        LoopbackHost.isLoopback(host)
    }
}
