import ArgumentParser
import CredentialVault

extension VaultCommand {
    /// `vault refresh`: one refresh now, through the stored client configuration.
    struct Refresh: ContextCommand {
        static let configuration = CommandConfiguration(
            commandName: "refresh",
            abstract: "Refresh the access token now with the stored OAuth client (rotation honoured).",
            discussion: """
                Exits 77 and signs out to guest when the server rejects the refresh token (invalid_grant); \
                69 when the server cannot be reached or fails (the session is kept); 76 for other OAuth errors.
                """
        )

        @OptionGroup var options: VaultOptions
        @OptionGroup var server: ServerOptions

        @Option(help: ArgumentHelp("With a PostgreSQL store (--store): the fleet session, shared by every replica.", valueName: "NAME"))
        var session: String?

        static var oauthHandOver: OAuthHandOver { .always }

        func run(_ context: CommandContext) async throws {
            let isFileSession = try context.selectsFileSession(options, fleetSession: session)
            guard let stored = try await context.storedClient(options) else {
                throw VaultError(.notFound, "no OAuth client is configured" + (isFileSession ? "" : " in this PostgreSQL store"),
                                 fix: "sign in with 'vault signin --device …' or store one with 'vault client …'")
            }
            let manager = try await context.session(options, fleetSession: session, key: .whenVaultExists)
            _ = await manager.restore()
            let credentials = try await OAuthSupport.using(try await context.oauthClient(for: stored, options, server)) { client in
                try await client.refreshNow(manager, warning: OAuthSupport.warn)
            }
            ErrorReport.note("Refreshed: \(credentials)")
        }
    }
}
