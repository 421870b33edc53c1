import ArgumentParser
import CredentialVault
import FoundationEssentials
import VaultCrypto

extension VaultCommand {
    /// `vault signin`: stores an OAuth 2.0 token response and upgrades the guest.
    struct SignIn: ContextCommand {
        static let configuration = CommandConfiguration(
            commandName: "signin",
            abstract: "Sign in with an OAuth 2.0 token response read from standard input, or with --browser or --device.",
            discussion: """
                Standard input is the token endpoint's JSON (RFC 6749 §5.1: access_token, token_type, \
                expires_in, and optionally refresh_token, id_token, scope), so `curl … | vault signin --user-id u1` \
                works. An OAuth error response on standard input exits 76 and shows its error_description.
                With --device --issuer URL --client-id ID the device authorization grant (RFC 8628) runs: the \
                verification URI and user code go to standard error, and the client configuration is stored so \
                that 'vault token' and 'vault refresh' can refresh. The user id is the ID token's 'sub' (or \
                userinfo's) unless --user-id is given.
                With --browser --issuer URL --client-id ID the user signs in in their browser: authorization code \
                with PKCE (RFC 7636) and a redirect to http://127.0.0.1:PORT/callback (RFC 8252). The address goes \
                to standard error; $BROWSER, else xdg-open, is started with http://127.0.0.1:PORT/signin, which \
                redirects it there (--no-open only prints), and the listener answers only this user's processes. The ID \
                token is verified with the issuer's keys; its subject, name and email name the user.
                A sign-in keeps the stored client's DPoP setting and key; --dpop turns DPoP on, --no-dpop turns it \
                off and removes the key.
                From guest mode the guest's transferable items move to the account in the same atomic write.
                """
        )

        @OptionGroup var options: VaultOptions
        @OptionGroup var server: ServerOptions

        @Option(name: .customLong("user-id"), help: "The account's stable id (e.g. the 'sub' claim); required unless --device.")
        var userID: String?

        @Flag(help: "Sign in with the device authorization grant (RFC 8628) instead of reading standard input.")
        var device = false

        @Flag(help: "Sign in in the browser: authorization code with PKCE and a loopback redirect (RFC 8252).")
        var browser = false

        @Option(name: .customLong("redirect-port"), help: ArgumentHelp("With --browser: the loopback port to listen on (default: a free one).",
                                                                       valueName: "N"))
        var redirectPort: Int?

        @Flag(name: .customLong("no-open"), help: "With --browser: print the address only; do not start a browser.")
        var noOpen = false

        @Option(name: .customLong("wait"), help: ArgumentHelp("With --browser: how long to wait for the sign-in (default 5m; 1s to 1h).",
                                                              valueName: "DURATION"), transform: HumanDuration.seconds(in:))
        var waitSeconds: Int64 = 300

        @OptionGroup var client: ClientOptions

        @Flag(name: .customLong("no-dpop"), help: "With --browser or --device: turn the stored client's DPoP off and remove its key.")
        var noDPoP = false

        @Option(help: "A display name.")
        var name: String?

        @Option(help: "The account's email address.")
        var email: String?

        @Option(name: .customLong("method"), help: "How the user signed in (password, google, apple, …).")
        var method: String?

        @Flag(help: "Mark the app's onboarding as finished for this user.")
        var onboarded = false

        @Option(name: .customLong("merge-policy"), help: ArgumentHelp(
            "For items both the guest and the account have: keepAccount (default), keepGuest, newestWins, fail.",
            valueName: "POLICY"))
        var mergePolicy: MergePolicy = .keepAccount

        @Flag(help: "Print the migration report as JSON.")
        var json = false

        @Option(help: ArgumentHelp("With a PostgreSQL store (--store): the fleet session, shared by every replica.", valueName: "NAME"))
        var session: String?

        /// The device grant calls the authorization server: in vault-oauth; a token response on
        /// standard input is stored here.
        var oauthHandOver: OAuthHandOver { device || browser ? .always : .never }

        func validate() throws {
            if device && browser { throw ValidationError("--device and --browser are two ways to sign in: choose one") }
            if !browser, redirectPort != nil || noOpen {
                throw ValidationError("--redirect-port and --no-open go with --browser")
            }
            if let redirectPort, !(1...65535).contains(redirectPort) { throw ValidationError("--redirect-port must be 1 to 65535") }
            guard (1...3600).contains(waitSeconds) else { throw ValidationError("--wait must be between 1s and 1h") }
            if noDPoP, client.dpop { throw ValidationError("--dpop and --no-dpop: choose one") }
        }

        func run(_ context: CommandContext) async throws {
            let onFleet = try context.storeSelection(options) != .file
            if onFleet, device || browser {
                throw UsageError("--device and --browser sign in the vault file's user; for a fleet session pipe the token response in")
            }
            if !device && !browser && (self.client.dpop || noDPoP) {
                throw UsageError("--dpop and --no-dpop go with --browser or --device (or 'vault client --dpop')")
            }
            if device || browser { return try await signInThroughServer(context) }
            guard let userID = userID ?? (onFleet ? session : nil) else {
                throw UsageError("--user-id is required when the token response is piped in (or use --device)")
            }
            guard !StandardIO.isTerminal(0) else {
                throw UsageError("pipe the token response JSON into 'vault signin' (for example: curl … | vault signin --user-id \(userID))")
            }
            let body = try StandardIO.readAll(from: 0, limit: TokenResponse.maximumLength, name: "standard input")
            guard !body.isEmpty else {
                throw UsageError("standard input is empty: 'vault signin' reads the token endpoint's JSON response",
                                 hint: "curl -s … https://auth.example.com/token | vault signin --user-id \(userID)")
            }
            if let refused = TokenResponse.parseError(body) {
                throw VaultError(.serverRefused, "the token response is an OAuth error: \(refused.description)",
                                 fix: "sign in again at the server; nothing was changed")
            }
            let credentials = try TokenResponse.parse(body, receivedAt: Date())
            if onFleet {
                let manager = try await context.session(options, fleetSession: session, key: .required)
                try await manager.signIn(user: User(id: userID), credentials: credentials)
                return ErrorReport.note("Saved the tokens of the session '\(TerminalText.escaped(userID))' (\(credentials)).")
            }
            try await finish(user: userID, credentials: credentials, context: context)
        }

        /// `--browser` or `--device`: the library's sign-in with the client given on the command line,
        /// which is then stored (sealed) for `token`, `refresh` and `signout`.
        private func signInThroughServer(_ context: CommandContext) async throws {
            var stored = try self.client.stored()
            if browser, stored.issuer == nil { throw UsageError("--browser needs --issuer (the ID token is verified against it)") }
            let dpopKey = try await dpop(context)
            stored.dpop = dpopKey != nil
            // The CA bundle's bytes as hashed into the configuration a moment ago (ClientOptions.stored).
            let bundle = try stored.verifiedCABundle()
            let session = try await context.session(options, fleetSession: self.session, key: .required)
            _ = await session.restore()
            let openBrowser = !noOpen
            let method: CommandSignInMethod = if browser {
                .browser(port: redirectPort, wait: .seconds(waitSeconds)) { url, start in
                    ErrorReport.note("To sign in, open this address in a browser:\n" + TerminalText.escaped(url)
                                     + "\n(or, on this computer, " + TerminalText.escaped(start) + ")")
                    guard openBrowser else { return }
                    // The browser gets the loopback address: the URL above never sits in its arguments.
                    if !SystemBrowser.open(start, environment: context.environment) {
                        ErrorReport.note("warning: could not start a browser ($BROWSER, else xdg-open); open the address above yourself")
                    }
                    ErrorReport.note("Waiting for the browser…")
                }
            } else {
                .device { ErrorReport.note($0 + "\nWaiting for approval…") }
            }
            // A public client: no secret, so no key is needed until the tokens are stored.
            let client = try context.requireOAuth().client(for: stored, secret: nil, requestTimeout: server.requestTimeout,
                                                           caBundle: bundle, dpopKey: dpopKey)
            let report = try await OAuthSupport.using(client) { client in
                try await client.signIn(session, method: method, policy: mergePolicy, lookingUpSubject: userID == nil) { found in
                    guard let id = userID ?? found.subject else {
                        throw UsageError("the server sent no ID token and no userinfo, so the user id is unknown; nothing was stored "
                                         + "and the tokens were revoked",
                                         hint: "pass --user-id ID (and add the 'openid' scope if the server supports it)")
                    }
                    return User(id: id, displayName: name ?? found.name, email: email ?? found.email,
                                signInMethod: self.method ?? found.methodName, onboardingComplete: onboarded)
                }
            }
            let storage = try await context.storage(.selected(), options)
            try await stored.save(to: storage, secret: nil, dpopKey: dpopKey)
            if dpopKey == nil { try await StoredClientConfiguration.removeDPoPKey(from: storage) }
            try StoredClientConfiguration.removeProfileCopy(options)
            try show(report)
        }

        /// The DPoP key the sign-in binds its tokens to, nil for none: the stored client's setting
        /// and key are kept (a new key only when there is none); `--dpop` turns it on, `--no-dpop` off.
        /// - Throws: why the stored client cannot be read (a forged profile copy, 65), unless a flag
        ///   decides: taking it for "no DPoP" would delete the sealed key and the forged copy; why
        ///   the sealed key cannot be read or used (it is never replaced silently).
        private func dpop(_ context: CommandContext) async throws -> SecureBytes? {
            if noDPoP { return nil }
            let storedDPoP: Bool
            switch await context.storedClientResult(options) {
            case .success(let stored): storedDPoP = stored?.dpop == true
            case .failure(let error):
                guard client.dpop else { throw error }
                storedDPoP = false
            }
            guard client.dpop || storedDPoP else { return nil }
            // A sealed key that cannot be read (or used) stops the sign-in with its error: replacing
            // it silently would unbind the tokens from the key they were issued for. Only a missing
            // one is made anew.
            do {
                let existing = try await context.dpopKey(options)
                do {
                    _ = try P256SigningKey(rawRepresentation: existing)
                } catch {
                    throw VaultError(.corrupt, "the sealed DPoP key (\(StoredClientConfiguration.dpopKeyEntry)) is not a P-256 key; nothing was changed",
                                     fix: "sign in with --no-dpop, which removes it")
                }
                return existing
            } catch let error as VaultError where error.code == .notFound {
                return try P256SigningKey().rawRepresentation
            }
        }

        private func finish(user userID: String, credentials: Credentials, context: CommandContext) async throws {
            let session = try await context.session(options, fleetSession: self.session, key: .required)
            _ = await session.restore()
            let user = User(id: userID, displayName: name, email: email, signInMethod: method, onboardingComplete: onboarded)
            try show(try await session.signIn(user: user, credentials: credentials, policy: mergePolicy))
        }

        /// The migration report on standard output (`--json`, or fields).
        private func show(_ report: MigrationReport) throws {
            if json {
                try StandardIO.printOutput(TextLayout.json(report.jsonValue))
            } else {
                let shown = { (names: [String]) in names.isEmpty ? "-" : names.map { TerminalText.escaped($0) }.joined(separator: ", ") }
                try StandardIO.printOutput(TextLayout.fields([
                    ("signed in", TerminalText.escaped(report.userID)),
                    ("from guest", TerminalText.escaped(report.anonymousID)),
                    ("moved", shown(report.moved)),
                    ("stayed with guest", shown(report.stayed)),
                    ("conflicts", shown(report.conflicts.map { "\($0.name) (\($0.resolution.rawValue))" })),
                ]))
            }
        }
    }
}

extension MigrationReport {
    /// The `vault signin --json` object.
    var jsonValue: JSONValue {
        .object([
            "anonymousId": .string(anonymousID),
            "userId": .string(userID),
            "moved": .array(moved.map(JSONValue.string)),
            "stayed": .array(stayed.map(JSONValue.string)),
            "conflicts": .array(conflicts.map { .object(["name": .string($0.name), "resolution": .string($0.resolution.rawValue)]) }),
        ])
    }
}
