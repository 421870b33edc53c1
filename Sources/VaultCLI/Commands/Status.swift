import ArgumentParser
import CredentialVault
import FoundationEssentials

extension VaultCommand {
    /// `vault status`: who is using the app right now.
    struct Status: ContextCommand {
        static let configuration = CommandConfiguration(
            commandName: "status",
            abstract: "Show the session state: guest, signedIn, needsOnboarding, expired or unavailable.",
            discussion: """
                Finds the session as an app would at start-up (SessionManager.restore()) but changes nothing \
                (SessionManager.peek()): a sign-in a crash interrupted is reported as it would be settled; with no \
                vault and no profile it says so and creates none. Exits 0 when the state is known; when it is \
                'unavailable' the exit status says why (65 corrupt, 74 unreadable, 75 busy, 77 locked or wrong key).
                """
        )

        @OptionGroup var options: VaultOptions

        @Flag(help: "Print a JSON object (see docs/CLI.md).")
        var json = false

        @Option(name: .customLong("min-ttl"), help: ArgumentHelp(
            "Count the session as expired unless the token stays valid this long (90s, 15m).", valueName: "DURATION"),
                transform: HumanDuration.seconds(in:))
        var minTTL: Int64 = 0

        @Option(help: ArgumentHelp("With a PostgreSQL store (--store): the fleet session, shared by every replica.", valueName: "NAME"))
        var session: String?

        func run(_ context: CommandContext) async throws {
            // A read command: it never writes, so it reports what a start-up would find
            // (SessionManager.peek) and creates no folder, profile or lock file.
            if try context.selectsFileSession(options, fleetSession: session), options.hasNoSession {
                let message = "no vault or profile in \(TerminalText.escaped(options.directory)) (nothing was created)"
                if json {
                    var object = SessionState.guest(anonymousID: "").jsonValue(anonymousID: nil)
                    if case var .object(fields) = object {
                        fields["message"] = .string(message)
                        object = .object(fields)
                    }
                    try StandardIO.printOutput(TextLayout.json(object))
                } else {
                    try StandardIO.printOutput(TextLayout.fields([
                        ("state", "guest"),
                        ("vault", message + "; 'vault init' or 'vault guest' makes one"),
                    ]))
                }
                return
            }
            let manager = try await context.session(options, fleetSession: session, key: .ifAvailable)
            let state = await manager.peek(minTTL: .seconds(minTTL))
            let anonymousID = await manager.anonymousID
            if json {
                try StandardIO.printOutput(TextLayout.json(state.jsonValue(anonymousID: anonymousID)))
            } else {
                try StandardIO.printOutput(Self.describe(state, anonymousID: anonymousID))
            }
            let status = state.exitStatus
            if status != VaultExitStatus.success { throw ExitCode(status) }
        }

        static func describe(_ state: SessionState, anonymousID: String?) -> String {
            let now = Date()
            var fields: [(label: String, value: String)] = [("state", state.name)]
            if let user = state.user {
                // Profile fields and the server's token_type are untrusted: escaped one by one.
                fields.append(("user", TerminalText.escaped(user.id)))
                if let name = user.displayName { fields.append(("name", TerminalText.escaped(name))) }
                if let email = user.email { fields.append(("email", TerminalText.escaped(email))) }
            }
            switch state {
            case let .signedIn(_, credentials), let .needsOnboarding(_, credentials):
                let expiry = credentials.expiresAt.map { ExpiryStatus(expiresAt: $0, now: now).description } ?? "no expiry known"
                fields.append(("token", "\(TerminalText.escaped(credentials.tokenType)), \(expiry)"))
                fields.append(("refresh token", credentials.refreshToken == nil ? "no" : "yes"))
            case let .expired(_, hasRefreshToken, expiresAt):
                if let expiresAt { fields.append(("token", ExpiryStatus(expiresAt: expiresAt, now: now).description)) }
                fields.append(("refresh token", hasRefreshToken ? "yes (refresh to continue)" : "no (sign in again)"))
            case let .unavailable(why):
                fields.append(("reason", TerminalText.escaped(why.description)))
            case .guest:
                break
            }
            if let anonymousID { fields.append(("anonymous id", TerminalText.escaped(anonymousID))) }
            return TextLayout.fields(fields)
        }
    }
}
