import ArgumentParser
import CredentialVault

extension VaultCommand {
    /// `vault signout`: back to guest; the user's credentials are removed from the vault.
    struct SignOut: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "signout",
            abstract: "Sign out: remove the user's credentials and items (data key rotated) and return to guest.",
            discussion: """
                This removes the tokens from the current vault file; it does not revoke them and does not erase \
                earlier copies: a backup, a snapshot or freed disk blocks holding an older vault file still open \
                with the same passphrase or key file. To make old copies unreadable, destroy the key file \
                ('vault wipe --destroy-key-file'). When an OAuth client is stored and the server has a revocation endpoint, the refresh and access \
                tokens are revoked (RFC 7009) after the local wipe; a failed revocation never undoes or blocks \
                the wipe, and is reported on standard error (the exit status stays 0).
                """
        )

        @OptionGroup var options: VaultOptions

        @Flag(name: .customLong("new-anonymous-id"), help: "Give the guest a new anonymous id instead of the old one.")
        var newAnonymousID = false

        @Option(name: .customLong("session"), help: ArgumentHelp("With a PostgreSQL store (--store): the fleet session, shared by every replica.", valueName: "NAME"))
        var fleetSession: String?

        func run() async throws {
            if let fleet = try FleetSession.selected(options, session: fleetSession) {
                let removed = try await fleet.signOut()
                return ErrorReport.note(removed ? "Signed out the session '\(TerminalText.escaped(fleet.name))'." : "The session had no tokens.")
            }
            // With a client stored, the tokens are revoked after the wipe: vault-oauth runs the
            // command. Without it installed the wipe still happens, and the revocation is reported failed.
            let stored = try? StoredClientConfiguration.load(options)
            if stored != nil { OAuthHelper.handOverIfInstalled() }
            let session = try options.sessionManager(needsKey: SecretStore.exists(in: options.directory))
            let before = await session.restore()
            let removed = try await session.signOut(newAnonymousID: newAnonymousID)
            let anonymousID = await session.anonymousID ?? ""
            ErrorReport.note(before.user.map { "Signed out '\(TerminalText.escaped($0.id))'." } ?? "Nobody was signed in.")
            if let removed, let stored {
                do {
                    let report = try await OAuthSupport.using(try stored.client(options)) { await $0.revokeAll(removed) }
                    ErrorReport.note(report.succeeded ? "Server: \(report.summary)." : "warning: \(report.summary)")
                } catch {
                    ErrorReport.note("warning: the tokens were not revoked at the server: \(TerminalText.escaped("\(error)"))")
                }
            }
            try StandardIO.printOutput(anonymousID + "\n")
        }
    }
}
