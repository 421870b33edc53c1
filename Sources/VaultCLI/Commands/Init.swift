import ArgumentParser
import CredentialVault

extension VaultCommand {
    /// `vault init`: a new, empty vault.
    struct Init: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "init",
            abstract: "Create an empty vault, opened by the key file or passphrase given.",
            discussion: """
                A passphrase typed on the terminal is asked for twice. A passphrase shorter than 12 bytes is \
                refused unless --weak-passphrase is given. Refuses when a vault exists.
                """
        )

        @OptionGroup var options: VaultOptions

        @Flag(name: .customLong("weak-passphrase"), help: "Accept a passphrase shorter than 12 bytes.")
        var weakPassphrase = false

        func run() throws {
            let store = try options.createStore(allowWeakPassphrase: weakPassphrase)
            ErrorReport.note("Created an empty vault in \(store.directory).")
        }
    }
}
