import ArgumentParser
import CredentialVault

extension VaultCommand {
    /// `vault signout`: back to guest; the user's credentials are crypto-shredded.
    struct SignOut: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "signout",
            abstract: "Sign out: remove the user's credentials and items (data key rotated) and return to guest."
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
