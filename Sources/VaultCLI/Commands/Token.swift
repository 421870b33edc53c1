import ArgumentParser
import CredentialVault
import FoundationEssentials

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

        static var oauthHandOver: OAuthHandOver { .whenInstalled }

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
            let state = await manager.peek(minTTL: .seconds(minTTL))
            if let credentials = state.credentials {
                return try StandardIO.printOutput(credentials.accessToken)
            }
            if !state.isUnavailable, let stored = try stored.get() {
                // Runs in vault-oauth when it is installed; without it the client is missing (66).
                let credentials = try await OAuthSupport.using(try await context.oauthClient(for: stored, options, server)) { client in
                    try await Self.fresh(session: manager, state: state, stored: stored, client: client, minTTL: minTTL)
                }
                return try StandardIO.printOutput(credentials.accessToken)
            }
            switch state {
            case let .signedIn(_, credentials), let .needsOnboarding(_, credentials):
                try StandardIO.printOutput(credentials.accessToken)
            case .expired:
                throw VaultError(.sessionExpired, "the access token is expired (or expires within --min-ttl), and no OAuth client is stored to refresh it",
                                 fix: "refresh it in your app, store a client with 'vault client', or sign in again with 'vault signin'")
            case .guest:
                throw VaultError(.notSignedIn, "nobody is signed in", fix: "sign in with 'vault signin'")
            case let .unavailable(why):
                throw why.error ?? VaultError(.wrongKey, "the vault is locked: no key was given", fix: "pass --key-file or a passphrase")
            }
        }

        /// Refreshes the user's session, or for a client_credentials client gets a token for the
        /// client itself (`SessionManager.clientCredentials`).
        static func fresh(session: SessionManager, state: SessionState, stored: StoredClientConfiguration,
                          client: any CommandOAuthClient, minTTL: Int64) async throws -> Credentials {
            if stored.grant == .clientCredentials {
                return try await session.clientCredentials(clientID: stored.clientID, minTTL: .seconds(minTTL)) {
                    try await client.clientCredentials()
                }
            }
            return try await session.validCredentials(minTTL: .seconds(minTTL), refresher: client.refresher)
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
