import ArgumentParser
import CredentialVault

extension VaultCommand {
    /// `vault init`: a new, empty vault.
    struct Init: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "init",
            abstract: "Create an empty vault, opened by the key file or passphrase given.",
            discussion: "A passphrase typed on the terminal is asked for twice. Refuses when a vault exists."
        )

        @OptionGroup var options: VaultOptions

        func run() throws {
            let store = try options.createStore()
            ErrorReport.note("Created an empty vault in \(store.directory).")
        }
    }
}
