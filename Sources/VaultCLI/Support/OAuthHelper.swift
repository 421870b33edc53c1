import CredentialVault
import Synchronization
import VaultCrypto

/// What the OAuth client adds to the command line. `vault-oauth` (Sources/VaultOAuthMain) and
/// `vault-postgres` link `CredentialVaultOAuth` (async-http-client, SwiftNIO and NIO-SSL's
/// BoringSSL) and provide it (`VaultOAuthCLI`); `vault` does not link that stack, so that the
/// commands that never talk to a server start faster and the binary stays small, and hands a
/// command that will talk to an authorization server to `vault-oauth` (`OAuthHelper`).
package protocol OAuthCommandSupport: Sendable {
    /// A client for `configuration`, authenticated with `secret` when its method needs one.
    func client(for configuration: StoredClientConfiguration, secret: SecureBytes?) throws -> any CommandOAuthClient
    /// How the command line reports `error` when it is the OAuth client's own; nil otherwise.
    func report(_ error: any Error) -> ReportedError?
}

/// An OAuth 2.0 client as the commands use it (`OAuthClient` behind `VaultOAuthCLI`).
package protocol CommandOAuthClient: Sendable {
    /// The refresh grant (RFC 6749 §6); the server's error as the OAuth client throws it.
    func refresh(_ refreshToken: SecureBytes) async throws -> Credentials
    /// The refresher for `SessionManager`: `invalid_grant` becomes `RefreshFailure.invalidGrant`.
    var refresher: TokenRefresher { get }
    /// The client credentials grant (RFC 6749 §4.4).
    func clientCredentials() async throws -> Credentials
    /// The device authorization grant (RFC 8628): `show` gets the text for the user (the
    /// verification URI and code), then this polls until the user approves.
    /// - Returns: the tokens, and with `lookingUpSubject` the user id from the ID token or
    ///   userinfo when the server gives one.
    func signInWithDevice(lookingUpSubject: Bool, show: (String) -> Void) async throws -> (credentials: Credentials, subject: String?)
    /// Revokes the refresh and access tokens (RFC 7009); never throws.
    /// - Returns: whether every revocation succeeded, and what happened, for the user.
    func revokeAll(_ credentials: Credentials) async -> (succeeded: Bool, summary: String)
    /// Closes the client's connections.
    func shutdown() async throws
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

/// Hands a command that will talk to an authorization server to `vault-oauth`, the same commands
/// linked with the OAuth client, before it reads anything (`HelperExecutable`).
enum OAuthHelper {
    /// The helper executable.
    static let executable = HelperExecutable(name: "vault-oauth", purpose: "talking to an OAuth server",
                                             fix: "install vault with its helpers (scripts/install, or the .deb)")

    /// The OAuth support of this executable: set by `vault-oauth` and `vault-postgres`, nil in `vault`.
    static let support = Mutex<(any OAuthCommandSupport)?>(nil)

    /// True in the executables that link the OAuth client.
    static var isLinked: Bool { support.withLock { $0 } != nil }

    /// Returns when this executable links the OAuth client; otherwise replaces the process with
    /// `vault-oauth` (same arguments and environment), or exits 66 when it is not installed.
    /// Called in a command's `run()` before it reads standard input, asks for a key or writes,
    /// so the helper starts from scratch.
    static func ensureLinked() {
        if !isLinked { executable.execute() }
    }

    /// As `ensureLinked()`, but returns when `vault-oauth` is not installed: for a command that
    /// can do its local part without the server (`signout` wipes, and reports the tokens unrevoked).
    static func handOverIfInstalled() {
        if !isLinked { executable.executeIfInstalled() }
    }

    /// The support, or an error naming the missing helper.
    static func required() throws -> any OAuthCommandSupport {
        if let support = support.withLock({ $0 }) { return support }
        throw executable.missing()
    }

    /// How an error of the OAuth client is reported, when this executable links it.
    static func report(_ error: any Error) -> ReportedError? {
        support.withLock { $0 }?.report(error)
    }
}
