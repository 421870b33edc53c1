import CredentialVault
import CredentialVaultOAuth

/// `vault signin --device`: the device authorization grant, with the user id from the server.
enum DeviceSignIn {
    /// Starts the grant, shows the code on standard error, polls until the user approves.
    /// - Returns: the user id, the tokens, and the client configuration to store.
    static func run(options: VaultOptions, client clientOptions: ClientOptions,
                    userID: String?) async throws -> (String, Credentials, StoredClientConfiguration) {
        let stored = try clientOptions.stored()
        return try await OAuthSupport.using(try stored.client(options)) { client in
            let authorization = try await client.startDeviceAuthorization()
            var text = "To sign in, open \(authorization.verificationURI) and enter the code \(authorization.userCode)"
            if let complete = authorization.verificationURIComplete { text += "\n(or open \(complete))" }
            ErrorReport.note(text + "\nWaiting for approval…")
            let credentials = try await client.pollDeviceAuthorization(authorization)
            var subject = userID
            if subject == nil { subject = try await client.subject(of: credentials) }
            guard let subject else {
                _ = await client.revokeAll(credentials)
                throw UsageError("the server sent no ID token and no userinfo, so the user id is unknown; the tokens were revoked",
                                 hint: "pass --user-id ID (and add the 'openid' scope if the server supports it)")
            }
            return (subject, credentials, stored)
        }
    }
}
