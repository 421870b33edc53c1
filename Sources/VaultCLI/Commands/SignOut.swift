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
                with the same passphrase or key file. Revoke the tokens at the server; to make old copies \
                unreadable, destroy the key file ('vault wipe --destroy-key-file').
                """
        )

        @OptionGroup var options: VaultOptions

        @Flag(name: .customLong("new-anonymous-id"), help: "Give the guest a new anonymous id instead of the old one.")
        var newAnonymousID = false

        func run() async throws {
            let session = try options.sessionManager(needsKey: SecretStore.exists(in: options.directory))
            let before = await session.restore()
            try await session.signOut(newAnonymousID: newAnonymousID)
            let anonymousID = await session.anonymousID ?? ""
            ErrorReport.note(before.user.map { "Signed out '\(TerminalText.escaped($0.id))'." } ?? "Nobody was signed in.")
            try StandardIO.printOutput(anonymousID + "\n")
        }
    }
}
