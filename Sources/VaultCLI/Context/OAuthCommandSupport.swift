import CredentialVault

/// What the OAuth client adds to the command line. `vault-oauth` (Sources/VaultOAuthMain) and
/// `vault-postgres` link `CredentialVaultOAuth` (async-http-client, SwiftNIO and NIO-SSL's
/// BoringSSL) and provide it (`VaultOAuthCLI`); `vault` does not link that stack, so that the
/// commands that never talk to a server start faster and the binary stays small, and hands a
/// command that will talk to an authorization server to `vault-oauth` (the entry pipeline,
/// `ContextCommand.oauthHandOver`).
package protocol OAuthCommandSupport: Sendable {
    /// A client for `configuration`, authenticated with `secret` when its method needs one; every
    /// exchange with the server has the one deadline `requestTimeout` (body included). With
    /// `caBundle`, it trusts exactly those (already verified) PEM bytes. With `dpopKey` (the raw
    /// P-256 key) every token request carries a DPoP proof.
    func client(for configuration: StoredClientConfiguration, secret: SecureBytes?, requestTimeout: Duration,
                caBundle: [UInt8]?, dpopKey: SecureBytes?) throws -> any CommandOAuthClient
    /// How the command line reports `error` when it is the OAuth client's own; nil otherwise.
    func report(_ error: any Error) -> ReportedError?
}

/// An OAuth 2.0 client as the commands use it (`OAuthClient` behind `VaultOAuthCLI`).
package protocol CommandOAuthClient: Sendable {
    /// The refresh grant (RFC 6749 §6); the server's error as the OAuth client throws it.
    func refresh(_ refreshToken: SecureBytes) async throws -> Credentials
    /// The refresher for `SessionManager`: `invalid_grant` becomes `RefreshFailure.invalidGrant`.
    var refresher: TokenRefresher { get }
    /// The refresher for a token of another audience (RFC 8707 `resource`).
    var audienceRefresher: AudienceTokenRefresher { get }
    /// The client credentials grant (RFC 6749 §4.4).
    func clientCredentials() async throws -> Credentials
    /// The device authorization grant (RFC 8628): `show` gets the text for the user (the
    /// verification URI and code), then this polls until the user approves.
    /// - Returns: the tokens, and with `lookingUpSubject` the user id from the ID token or
    ///   userinfo when the server gives one.
    func signInWithDevice(lookingUpSubject: Bool, show: (String) -> Void) async throws -> (credentials: Credentials, subject: String?)
    /// The browser sign-in (authorization code + PKCE, loopback redirect): `open` gets the
    /// authorization URL; the tokens come back with the verified user, when the server said.
    func signInWithBrowser(port: Int?, wait: Duration, open: @Sendable (String) async -> Void) async throws -> CommandSignIn
    /// Revokes the refresh and access tokens (RFC 7009); never throws.
    /// - Returns: whether every revocation succeeded, what happened (for the user), and the token
    ///   types revoked ("refresh_token", "access_token").
    func revokeAll(_ credentials: Credentials) async -> (succeeded: Bool, summary: String, revoked: [String])
    /// Revokes one token (RFC 7009) with its type hint; never throws. - Returns: whether it was revoked.
    func revoke(_ token: SecureBytes, hint: String) async -> Bool
    /// Closes the client's connections.
    func shutdown() async throws
}

/// What a sign-in through the server gave: the tokens, and the user as the server verified them.
package struct CommandSignIn: Sendable {
    package let credentials: Credentials
    package let subject: String?
    package let name: String?
    package let email: String?

    package init(credentials: Credentials, subject: String?, name: String? = nil, email: String? = nil) {
        self.credentials = credentials
        self.subject = subject
        self.name = name
        self.email = email
    }
}

/// An error as the command line reports it: `vault: message`, `hint: hint`, and the exit status.
package struct ReportedError: Sendable {
    /// The message (escaped when shown).
    package let message: String
    /// The fix, when there is one.
    package let hint: String?
    /// The exit status (docs/CLI.md).
    package let exitStatus: Int32

    /// An error report.
    package init(message: String, hint: String?, exitStatus: Int32) {
        self.message = message
        self.hint = hint
        self.exitStatus = exitStatus
    }
}
