import ArgumentParser
import CredentialVault
import FoundationEssentials

extension VaultCommand {
    /// `vault token`: the signed-in user's access token, for scripts.
    struct Token: AsyncParsableCommand {
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

        @Option(name: .customLong("min-ttl"), help: ArgumentHelp(
            "Fail unless the token stays valid this long (90s, 15m).", valueName: "DURATION"),
                transform: HumanDuration.seconds(in:))
        var minTTL: Int64 = 0

        @Option(help: ArgumentHelp("Count a token expiring within this margin as expired (default 60s).", valueName: "DURATION"),
                transform: HumanDuration.seconds(in:))
        var leeway: Int64?

        @Option(help: ArgumentHelp("With a PostgreSQL store (--store): the fleet session, shared by every replica.", valueName: "NAME"))
        var session: String?

        func run() async throws {
            if let fleet = try FleetSession.selected(options, session: session) {
                let credentials = try await fleet.token(minTTL: minTTL, leeway: leeway ?? 60)
                return try StandardIO.printOutput(credentials.accessToken)
            }
            // Nothing is created on a missing vault, and a valid token is read without writing
            // (SessionManager.peek); only a refresh writes, as it must to save the new pair.
            if options.hasNoSession { throw VaultError.vaultNotFound(path: options.directory) }
            // With a client stored, the token may need a refresh, which vault-oauth makes. A valid
            // token is still printed here when the key comes from a source the helper can read
            // again (a file, VAULT_PASSPHRASE), without reading the profile; a passphrase typed on
            // the terminal is asked for once, in the helper.
            let early = KeySources.isRereadable(options) ? nil : try StoredClientConfiguration.load(options)
            if early != nil { OAuthHelper.ensureLinked() }
            let session = try OAuthSupport.session(options, leeway: leeway)
            let state = await session.peek(minTTL: .seconds(minTTL))
            if let credentials = state.credentials {
                return try StandardIO.printOutput(credentials.accessToken)
            }
            if state.name != "unavailable", let stored = try early ?? StoredClientConfiguration.load(options) {
                // Nothing was written or consumed (peek reads only): the helper starts over.
                OAuthHelper.ensureLinked()
                let credentials = try await OAuthSupport.using(try stored.client(options)) { client in
                    try await Self.fresh(session: session, state: state, stored: stored, client: client, minTTL: minTTL)
                }
                return try StandardIO.printOutput(credentials.accessToken)
            }
            switch state {
            case let .signedIn(_, credentials), let .needsOnboarding(_, credentials):
                try StandardIO.printOutput(credentials.accessToken)
            case .expired:
                throw VaultError(.sessionExpired, "the access token is expired (or expires within --min-ttl)",
                                 fix: "refresh it in your app, or sign in again with 'vault signin'")
            case .guest:
                throw VaultError(.notSignedIn, "nobody is signed in", fix: "sign in with 'vault signin'")
            case let .unavailable(why):
                throw why.error ?? VaultError(.wrongKey, "the vault is locked: no key was given", fix: "pass --key-file or a passphrase")
            }
        }

        /// Refreshes the user's session, or for a client_credentials client fetches a token
        /// for the client itself and keeps it as the session of user "client:ID".
        static func fresh(session: SessionManager, state: SessionState, stored: StoredClientConfiguration,
                          client: any CommandOAuthClient, minTTL: Int64) async throws -> Credentials {
            if stored.grant == "client_credentials", state.user == nil || state.user?.id == "client:" + stored.clientID {
                let credentials = try await client.clientCredentials()
                try await session.signIn(user: User(id: "client:" + stored.clientID, signInMethod: "client_credentials",
                                                    onboardingComplete: true), credentials: credentials)
                return credentials
            }
            guard state.user != nil else {
                throw VaultError(.notSignedIn, "nobody is signed in", fix: "sign in with 'vault signin'")
            }
            return try await session.validCredentials(minTTL: .seconds(minTTL), refresher: client.refresher)
        }
    }
}
