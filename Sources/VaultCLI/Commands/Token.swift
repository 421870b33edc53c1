import ArgumentParser
import CredentialVault
import FoundationEssentials
import VaultCrypto

extension VaultCommand {
    /// `vault token`: the signed-in user's access token, for scripts.
    struct Token: ContextCommand {
        static let configuration = CommandConfiguration(
            commandName: "token",
            abstract: "Print the signed-in user's access token, if it is valid (for `curl -H \"Authorization: Bearer $(vault token)\"`).",
            discussion: """
                Writes exactly the token bytes. A token still valid (beyond --leeway and --min-ttl) is printed \
                without any network call. Otherwise, when an OAuth client is stored ('vault signin --device', \
                'vault client'), it is refreshed first (or, for a client_credentials client, fetched anew). \
                Exits 77 when the session is expired (or the server rejected the refresh token), 66 when nobody is \
                signed in, 69 when the server is unreachable (session kept), 76 for an OAuth error.
                With --headers --http-method METHOD --url URL it prints the header lines an API call needs \
                instead, one per line: 'Authorization: <token type> <token>' and, for a DPoP-bound token \
                (--dpop), 'DPoP: <proof>' for that method and URL (with the resource server's --dpop-nonce), \
                so that `vault token --headers --http-method GET --url "$U" | curl -H @- "$U"` works.
                With --audience AUD it prints a token for that resource instead (RFC 8707: a refresh-token \
                grant with 'resource'), kept in the vault until it expires and removed at sign-out.
                """
        )

        @OptionGroup var options: VaultOptions
        @OptionGroup var server: ServerOptions

        @Option(name: .customLong("min-ttl"), help: ArgumentHelp(
            "Fail unless the token stays valid this long (90s, 15m).", valueName: "DURATION"),
                transform: HumanDuration.seconds(in:))
        var minTTL: Int64 = 0

        @Option(help: ArgumentHelp("Count a token expiring within this margin as expired (default 60s).", valueName: "DURATION"),
                transform: HumanDuration.seconds(in:))
        var leeway: Int64?

        @Option(help: ArgumentHelp("With a PostgreSQL store (--store): the fleet session, shared by every replica.", valueName: "NAME"))
        var session: String?

        @Option(help: ArgumentHelp("A token for this resource (RFC 8707), from the same sign-in; cached until it expires.",
                                   valueName: "AUD"))
        var audience: String?

        @Flag(help: "Print the HTTP header lines for an API call (Authorization, and DPoP for a DPoP-bound token).")
        var headers = false

        @Option(name: .customLong("http-method"), help: ArgumentHelp("With --headers: the request's method (GET, POST, …).", valueName: "METHOD"))
        var httpMethod: String?

        @Option(help: ArgumentHelp("With --headers: the request's URL (the DPoP proof's htu).", valueName: "URL"))
        var url: String?

        @Option(name: .customLong("dpop-nonce"), help: ArgumentHelp("With --headers: the resource server's DPoP-Nonce.", valueName: "NONCE"))
        var dpopNonce: String?

        static var oauthHandOver: OAuthHandOver { .whenInstalled }

        func validate() throws {
            if headers {
                guard httpMethod != nil, url != nil else { throw ValidationError("--headers needs --http-method and --url") }
            } else if httpMethod != nil || url != nil || dpopNonce != nil {
                throw ValidationError("--http-method, --url and --dpop-nonce go with --headers")
            }
        }

        func run(_ context: CommandContext) async throws {
            // Nothing is created on a missing vault, and a valid token is read without writing
            // (SessionManager.peek); only a refresh writes, as it must to save the new pair.
            if try context.selectsFileSession(options, fleetSession: session), options.hasNoSession { throw VaultError.vaultNotFound(path: options.directory) }
            // The session and the client's secret share the context's store (one key derivation), or
            // both go through the user's agent when it holds the vault: the key stays there. A
            // client_credentials client signs its first token in, which needs the vault itself.
            let stored = await context.storedClientResult(options)
            let grant = (try? stored.get())??.grant
            let manager = try await context.session(options, fleetSession: session, key: .whenVaultExists,
                                                    leeway: leeway.map { .seconds($0) }, throughAgent: grant != .clientCredentials)
            if let audience {
                guard let client = try stored.get() else {
                    throw VaultError(.notFound, "no OAuth client is stored to ask for a token for another audience",
                                     fix: "store one with 'vault client' or sign in with 'vault signin --browser/--device'")
                }
                let credentials = try await OAuthSupport.using(try await context.oauthClient(for: client, options, server)) { oauth in
                    try await oauth.validCredentials(manager, forAudience: audience, minTTL: .seconds(minTTL))
                }
                return try await write(credentials, stored: stored, context: context)
            }
            let state = await manager.peek(minTTL: .seconds(minTTL))
            if let credentials = state.credentials {
                return try await write(credentials, stored: stored, context: context)
            }
            if !state.isUnavailable, let client = try stored.get() {
                // Runs in vault-oauth when it is installed; without it the client is missing (66).
                let credentials = try await OAuthSupport.using(try await context.oauthClient(for: client, options, server)) { oauth in
                    try await Self.fresh(session: manager, stored: client, client: oauth, minTTL: minTTL)
                }
                return try await write(credentials, stored: stored, context: context)
            }
            switch state {
            case let .signedIn(_, credentials), let .needsOnboarding(_, credentials):
                try await write(credentials, stored: stored, context: context)
            case .expired:
                throw VaultError(.sessionExpired, "the access token is expired (or expires within --min-ttl), and no OAuth client is stored to refresh it",
                                 fix: "refresh it in your app, store a client with 'vault client', or sign in again with 'vault signin'")
            case .guest:
                throw VaultError(.notSignedIn, "nobody is signed in", fix: "sign in with 'vault signin'")
            case let .unavailable(why):
                throw why.error ?? VaultError(.wrongKey, "the vault is locked: no key was given", fix: "pass --key-file or a passphrase")
            }
        }

        /// The token, or with `--headers` the header lines for one request.
        private func write(_ credentials: Credentials, stored: Result<StoredClientConfiguration?, VaultError>,
                           context: CommandContext) async throws {
            guard headers, let httpMethod, let url else { return try StandardIO.printOutput(credentials.accessToken) }
            // A header line ends at CR or LF: a token or type holding one (or any control or
            // space) could add headers of the server's choosing. Refused, nothing printed.
            let printable = { (byte: UInt8) in (0x21...0x7E).contains(byte) }
            guard !credentials.tokenType.isEmpty, credentials.tokenType.utf8.allSatisfy(printable),
                  credentials.accessToken.withUnsafeBytes({ !$0.isEmpty && $0.allSatisfy(printable) }) else {
                throw VaultError(.invalidInput, "the access token or its type holds characters that cannot go in a header line "
                                 + "(CR, LF, spaces or controls); nothing was printed", fix: "sign in again; tell the server's operator")
            }
            var lines = SecureBytes(copying: Array("Authorization: \(credentials.tokenType) ".utf8))
                .appending(credentials.accessToken).appending(SecureBytes(copying: Array("\n".utf8)))
            if credentials.tokenType.lowercased() == "dpop" {
                guard let target = URL(string: url), let scheme = target.scheme?.lowercased(), ["http", "https"].contains(scheme),
                      target.host != nil else {
                    throw UsageError("--url must be an http or https URL")
                }
                guard (try? stored.get())??.dpop == true else {
                    throw VaultError(.notFound, "the token is DPoP-bound but no DPoP key is stored with the client",
                                     fix: "sign in again with --dpop")
                }
                let key = try P256SigningKey(rawRepresentation: try await context.dpopKey(options))
                let proof = try DPoPProof.make(key: key, method: httpMethod, url: target, accessToken: credentials.accessToken,
                                               nonce: dpopNonce)
                lines = lines.appending(SecureBytes(copying: Array("DPoP: \(proof)\n".utf8)))
            }
            try StandardIO.printOutput(lines)
        }

        /// Refreshes the user's session, or for a client_credentials client gets a token for the
        /// client itself (`SessionManager.clientCredentials`).
        static func fresh(session: SessionManager, stored: StoredClientConfiguration, client: any CommandOAuthClient,
                          minTTL: Int64) async throws -> Credentials {
            if stored.grant == .clientCredentials {
                return try await client.clientCredentials(session, clientID: stored.clientID, minTTL: .seconds(minTTL))
            }
            return try await client.validCredentials(session, minTTL: .seconds(minTTL), warning: OAuthSupport.warn)
        }
    }
}

extension SessionState {
    /// True for `.unavailable` (locked, corrupt, unreadable, busy).
    var isUnavailable: Bool {
        if case .unavailable = self { return true }
        return false
    }
}
