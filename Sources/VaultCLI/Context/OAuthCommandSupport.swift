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

/// The session operations that talk to the authorization server, as the commands use them: each
/// one is the library's `SessionManager` extension (CredentialVaultOAuth) called with this
/// client, so that a sign-in, a sign-out or a refresh is written once, in the library.
package protocol CommandOAuthClient: Sendable {
    /// Signs in through the server (`SessionManager.signIn(using:client:…)`): every ID token is
    /// verified; `user` makes the account from what the server said (it may throw: the fresh
    /// tokens are then revoked, as when the sign-in cannot be saved).
    /// - Parameter lookingUpSubject: whether to ask userinfo for the user id when no ID token came.
    func signIn(_ session: SessionManager, method: CommandSignInMethod, policy: MergePolicy, lookingUpSubject: Bool,
                user: @Sendable (CommandSignInIdentity) throws -> User) async throws -> MigrationReport
    /// Signs out locally, then revokes the removed tokens (and those kept from earlier sign-outs);
    /// what failed is kept sealed for a later try (`SessionManager.signOut(revokingWith:…)`).
    func signOut(_ session: SessionManager, newAnonymousID: Bool) async throws -> CommandRevocation
    /// Enters guest mode, revoking the signed-out user's tokens (`SessionManager.enterGuestMode(resetAnonymousID:revokingWith:)`).
    func enterGuestMode(_ session: SessionManager, resetAnonymousID: Bool) async throws -> (anonymousID: String, revocation: CommandRevocation)
    /// Ends the sessions of a vault whose profile is missing, each revoked first, user after user:
    /// `ending` is told each user id before its tokens are revoked, `ended` what the server did.
    /// - Returns: the ids of the users whose sessions ended.
    func recoverFromMissingProfile(_ session: SessionManager, ending: @Sendable (String) -> Void,
                                   ended: @Sendable (String, CommandRevocation) -> Void) async throws -> [String]
    /// One refresh now (`SessionManager.refreshNow(client:)`); a refused ID token keeps the old
    /// tokens; one that cannot be checked now is dropped and `warning` told so.
    func refreshNow(_ session: SessionManager, warning: @escaping @Sendable (String) -> Void) async throws -> Credentials
    /// Credentials valid for `minTTL`, refreshed when needed, waiting for another process's refresh
    /// up to the client's refresh budget (`SessionManager.validCredentials(minTTL:client:)`); a
    /// refreshed ID token that cannot be checked now is dropped and `warning` told so. No pending
    /// revocation is tried in the background: the command exits once it has its token.
    func validCredentials(_ session: SessionManager, minTTL: Duration, warning: @escaping @Sendable (String) -> Void) async throws -> Credentials
    /// A token for another audience (RFC 8707), cached until it expires (`SessionManager.validCredentials(forAudience:…)`).
    func validCredentials(_ session: SessionManager, forAudience audience: String, minTTL: Duration) async throws -> Credentials
    /// The client's own token (client credentials grant), cached in the session (`SessionManager.clientCredentials(clientID:…)`).
    func clientCredentials(_ session: SessionManager, clientID: String, minTTL: Duration) async throws -> Credentials
    /// Closes the client's connections.
    func shutdown() async throws
}

/// How `vault signin` signs in through the server.
package enum CommandSignInMethod: Sendable {
    /// The device authorization grant: `show` gets the text for the user (the address and code).
    case device(show: @Sendable (String) -> Void)
    /// The browser (authorization code + PKCE, loopback redirect): `open` gets the authorization
    /// URL to show, and the loopback address to start the browser with (`/signin`, which redirects
    /// this user's browser there: the URL's `state` and challenge never sit in a process's arguments).
    case browser(port: Int?, wait: Duration, open: @Sendable (_ shown: String, _ browser: String) async -> Void)
}

/// What the server said of the user who signed in.
package struct CommandSignInIdentity: Sendable {
    /// The verified ID token's `sub`, else userinfo's; nil when the server told neither.
    package let subject: String?
    /// The verified ID token's `name` and `email`.
    package let name: String?
    package let email: String?
    /// "device" or "browser".
    package let methodName: String

    package init(subject: String?, name: String?, email: String?, methodName: String) {
        self.subject = subject
        self.name = name
        self.email = email
        self.methodName = methodName
    }
}

/// What happened to the tokens at the server (RFC 7009) after a sign-out; the local wipe has
/// happened whatever it says.
package struct CommandRevocation: Sendable {
    /// False when a revocation failed.
    package let succeeded: Bool
    /// What happened, for the user ("revoked refresh_token, access_token", "nothing to revoke", …).
    package let summary: String
    /// Whether there were tokens to revoke.
    package let hadTokens: Bool
    /// How many tokens whose revocation failed were kept sealed for a later try.
    package let keptForLater: Int
    /// Whether tokens whose revocation failed could not be kept (the vault busy, the disk full).
    package let couldNotKeep: Bool
    /// The tokens kept from earlier sign-outs tried again: revoked, of how many.
    package let earlier: (revoked: Int, tried: Int)?

    package init(succeeded: Bool, summary: String, hadTokens: Bool, keptForLater: Int, couldNotKeep: Bool = false,
                 earlier: (revoked: Int, tried: Int)?) {
        self.succeeded = succeeded
        self.summary = summary
        self.hadTokens = hadTokens
        self.keptForLater = keptForLater
        self.couldNotKeep = couldNotKeep
        self.earlier = earlier
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
