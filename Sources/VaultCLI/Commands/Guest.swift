import ArgumentParser
import CredentialVault

extension VaultCommand {
    /// `vault guest`: enter guest mode and print the anonymous id.
    struct Guest: ContextCommand {
        static let configuration = CommandConfiguration(
            commandName: "guest",
            abstract: "Enter guest mode (the 'skip' button) and print the anonymous id.",
            discussion: "Signs out first if someone is signed in. Guest items and settings are reset to defaults."
        )

        @OptionGroup var options: VaultOptions
        @OptionGroup var server: ServerOptions

        @Flag(help: "Start over with a new anonymous id.")
        var reset = false

        static var oauthHandOver: OAuthHandOver { .whenInstalled }

        func run(_ context: CommandContext) async throws {
            try context.requireFileStore(options)
            let session = try await context.session(options, key: .whenVaultExists)
            let state = await session.restore()
            if case let .unavailable(why) = state { throw why.error ?? VaultError(.wrongKey, "the vault is locked: \(why)") }
            // Someone signed in: signed out first, and the removed tokens revoked with the stored
            // client (as 'vault signout' does), before the guest starts over.
            guard let user = state.user else {
                return try StandardIO.printOutput(try await session.enterGuestMode(resetAnonymousID: reset) + "\n")
            }
            let stored = await context.storedClientResult(options)
            let anonymousID = try await OAuthSupport.endingSession(stored: stored, options: options, server: server, context: context) { client in
                let (anonymousID, revocation) = try await client.enterGuestMode(session, resetAnonymousID: reset)
                ErrorReport.note("Signed out '\(TerminalText.escaped(user.id))'.")
                OAuthSupport.show(revocation)
                return anonymousID
            } without: { why in
                let removed = try await session.signOut()
                ErrorReport.note("Signed out '\(TerminalText.escaped(user.id))'.")
                await OAuthSupport.notRevoked(removed, why, session: session)
                return try await session.enterGuestMode(resetAnonymousID: reset)
            }
            try StandardIO.printOutput(anonymousID + "\n")
        }
    }
}
