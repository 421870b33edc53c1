import ArgumentParser
import CredentialVault

extension VaultCommand {
    /// `vault refresh`: one refresh now, through the stored client configuration.
    struct Refresh: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "refresh",
            abstract: "Refresh the access token now with the stored OAuth client (rotation honoured).",
            discussion: """
                Exits 77 and signs out to guest when the server rejects the refresh token (invalid_grant); \\
                69 when the server cannot be reached or fails (the session is kept); 76 for other OAuth errors.
                """
        )

        @OptionGroup var options: VaultOptions

        @Option(help: ArgumentHelp("With a PostgreSQL store (--store): the fleet session, shared by every replica.", valueName: "NAME"))
        var session: String?

        func run() async throws {
            if let fleet = try FleetSession.selected(options, session: session) {
                let credentials = try await fleet.refreshNow()
                return ErrorReport.note("Refreshed: \(credentials)")
            }
            guard let stored = try StoredClientConfiguration.load(options) else {
                throw VaultError(.notFound, "no OAuth client is configured",
                                 fix: "sign in with 'vault signin --device …' or store one with 'vault client …'")
            }
            OAuthHelper.ensureLinked()
            let session = try OAuthSupport.session(options, leeway: nil)
            _ = await session.restore()
            let credentials = try await OAuthSupport.using(try stored.client(options)) { client in
                try await session.refreshNow(refresher: client.refresher)
            }
            ErrorReport.note("Refreshed: \(credentials)")
        }
    }
}
