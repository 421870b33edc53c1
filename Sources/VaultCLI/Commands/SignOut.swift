import ArgumentParser
import CredentialVault

extension VaultCommand {
    /// `vault signout`: back to guest; the user's credentials are removed from the vault.
    struct SignOut: ContextCommand {
        static let configuration = CommandConfiguration(
            commandName: "signout",
            abstract: "Sign out: remove the user's credentials and items (data key rotated) and return to guest.",
            discussion: """
                This removes the tokens from the current vault file; it does not revoke them and does not erase \
                earlier copies: a backup, a snapshot or freed disk blocks holding an older vault file still open \
                with the same passphrase or key file. To make old copies unreadable, destroy the key file \
                ('vault wipe --destroy-key-file'). When an OAuth client is stored and the server has a revocation endpoint, the refresh and access \
                tokens are revoked (RFC 7009) after the local wipe; a failed revocation never undoes or blocks \
                the wipe, and is reported on standard error (the exit status stays 0); the tokens it could not \
                revoke are kept sealed in the vault (never listed, at most 16, none older than 30 days) and the \
                next sign-out that reaches the same server revokes them. \
                With --recover, a vault whose profile.json is missing while it holds a signed-in session \
                (status "profileMissing", exit 65) has those sessions ended on purpose: each user's tokens are \
                revoked with the client sealed in the vault first, then removed, and the app starts as a guest.
                """
        )

        @OptionGroup var options: VaultOptions
        @OptionGroup var server: ServerOptions

        @Flag(name: .customLong("new-anonymous-id"), help: "Give the guest a new anonymous id instead of the old one.")
        var newAnonymousID = false

        @Flag(help: "profile.json is missing but the vault holds a session: end it on purpose (revoked first).")
        var recover = false

        @Option(name: .customLong("session"), help: ArgumentHelp("With a PostgreSQL store (--store): the fleet session, shared by every replica.", valueName: "NAME"))
        var fleetSession: String?

        static var oauthHandOver: OAuthHandOver { .whenInstalled }

        func run(_ context: CommandContext) async throws {
            // With a client stored, the library signs out and then revokes (this runs in vault-oauth
            // when it is installed; without it the wipe still happens, and the tokens are kept for later).
            let session = try await context.session(options, fleetSession: fleetSession, key: .whenVaultExists)
            let stored = await context.storedClientResult(options)
            if recover { return try await recoverMissingProfile(session, stored: stored, context: context) }
            let before = await session.restore()
            let hadTokens = try await OAuthSupport.endingSession(stored: stored, options: options, server: server, context: context) { client in
                let revocation = try await client.signOut(session, newAnonymousID: newAnonymousID)
                OAuthSupport.show(revocation)
                return revocation.hadTokens
            } without: { why in
                let removed = try await session.signOut(newAnonymousID: newAnonymousID)
                await OAuthSupport.notRevoked(removed, why, session: session)
                return removed != nil
            }
            if let fleetSession {
                return ErrorReport.note(hadTokens ? "Signed out the session '\(TerminalText.escaped(fleetSession))'." : "The session had no tokens.")
            }
            ErrorReport.note(before.user.map { "Signed out '\(TerminalText.escaped($0.id))'." } ?? "Nobody was signed in.")
            try StandardIO.printOutput((await session.anonymousID ?? "") + "\n")
        }

        /// `--recover`: ends the sessions of a vault whose profile is missing, each revoked first.
        private func recoverMissingProfile(_ session: SessionManager, stored: Result<StoredClientConfiguration?, VaultError>,
                                           context: CommandContext) async throws {
            guard fleetSession == nil else { throw UsageError("--recover is for the vault file's session") }
            let ending: @Sendable (String) -> Void = { userID in ErrorReport.note("Ending the session of '\(TerminalText.escaped(userID))'.") }
            let ended = try await OAuthSupport.endingSession(stored: stored, options: options, server: server, context: context) { client in
                // Each user's line, then what the server did with that user's tokens.
                try await client.recoverFromMissingProfile(session, ending: ending) { _, revocation in OAuthSupport.show(revocation) }
            } without: { why in
                try await session.recoverFromMissingProfile { userID, credentials in
                    ending(userID)
                    await OAuthSupport.notRevoked(credentials, why, session: session)
                }
            }
            guard !ended.isEmpty else {
                return ErrorReport.note("Nothing to recover: the profile exists, or the vault holds no session.")
            }
            ErrorReport.note("Ended \(ended.count) session\(ended.count == 1 ? "" : "s"); a new guest starts.")
            try StandardIO.printOutput((await session.anonymousID ?? "") + "\n")
        }
    }
}
