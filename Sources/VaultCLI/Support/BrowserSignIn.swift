#if canImport(Glibc)
import Glibc
#endif
import CredentialVault
import VaultCrypto

/// `vault signin --browser`: authorization code + PKCE through the user's browser and a
/// loopback redirect, with the user from the verified ID token (docs/CLI.md).
enum BrowserSignIn {
    /// Prints the authorization URL on standard error, opens it (unless `--no-open`), and waits
    /// for the callback.
    /// - Returns: the server's answer, and the client configuration to store.
    /// - Parameter dpopKey: the new DPoP key (`--dpop`), so that the sign-in's own tokens are bound.
    /// - Parameter userID: `--user-id`; without it the server must tell who the user is, or the
    ///   fresh tokens are revoked and the sign-in refused.
    static func run(client clientOptions: ClientOptions, server: ServerOptions, port: Int?, wait: Duration, openBrowser: Bool,
                    userID: String?, dpopKey: SecureBytes?, context: CommandContext) async throws -> (CommandSignIn, StoredClientConfiguration) {
        let stored = try clientOptions.stored()
        guard stored.issuer != nil else { throw UsageError("--browser needs --issuer (the ID token is verified against it)") }
        let bundle = try stored.verifiedCABundle()
        return try await OAuthSupport.using(try context.requireOAuth().client(for: stored, secret: nil, requestTimeout: server.requestTimeout,
                                                                              caBundle: bundle, dpopKey: dpopKey)) { client in
            let result = try await client.signInWithBrowser(port: port, wait: wait) { url in
                ErrorReport.note("To sign in, open this address in a browser:\n" + TerminalText.escaped(url))
                guard openBrowser else { return }
                if !open(url) {
                    ErrorReport.note("warning: could not start a browser ($BROWSER, else xdg-open); open the address above yourself")
                }
                ErrorReport.note("Waiting for the browser…")
            }
            guard userID != nil || result.subject != nil else {
                _ = await client.revokeAll(result.credentials)
                throw UsageError("the server sent no ID token and no userinfo, so the user id is unknown; nothing was stored "
                                 + "and the tokens were revoked", hint: "pass --user-id ID (and add the 'openid' scope if the server supports it)")
            }
            return (result, stored)
        }
    }

    /// Starts `$BROWSER` when set (the URL as its only argument), else `xdg-open`.
    private static func open(_ url: String) -> Bool {
        let browser = getenv("BROWSER").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 } ?? "xdg-open"
        return Subprocess.startDetached([browser, url])
    }
}
