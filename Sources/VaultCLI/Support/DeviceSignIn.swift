import CredentialVault
import VaultCrypto

/// `vault signin --device`: the device authorization grant, with the user id from the server.
enum DeviceSignIn {
    /// Starts the grant, shows the code on standard error, polls until the user approves.
    /// - Returns: the user id, the tokens, and the client configuration to store.
    /// - Parameter dpopKey: the new DPoP key (`--dpop`), so that the sign-in's own tokens are bound.
    static func run(options: VaultOptions, client clientOptions: ClientOptions, server: ServerOptions, userID: String?,
                    dpopKey: SecureBytes?, context: CommandContext) async throws -> (String, Credentials, StoredClientConfiguration) {
        let stored = try clientOptions.stored()
        // A public client: no secret, so no key is needed until the tokens are stored.
        // The CA bundle's bytes as hashed into the configuration a moment ago (ClientOptions.stored).
        let bundle = try stored.verifiedCABundle()
        return try await OAuthSupport.using(try context.requireOAuth().client(for: stored, secret: nil, requestTimeout: server.requestTimeout,
                                                                              caBundle: bundle, dpopKey: dpopKey)) { client in
            let (credentials, serverSubject) = try await client.signInWithDevice(lookingUpSubject: userID == nil) {
                ErrorReport.note($0 + "\nWaiting for approval…")
            }
            guard let subject = userID ?? serverSubject else {
                _ = await client.revokeAll(credentials)
                throw UsageError("the server sent no ID token and no userinfo, so the user id is unknown; the tokens were revoked",
                                 hint: "pass --user-id ID (and add the 'openid' scope if the server supports it)")
            }
            return (subject, credentials, stored)
        }
    }
}
