import ArgumentParser
import CredentialVault

extension VaultCommand {
    /// `vault init`: a new, empty vault.
    struct Init: ContextCommand {
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

        func run(_ context: CommandContext) async throws {
            let storage = try await context.storage(.selected(.create, allowingWeakPassphrase: weakPassphrase), options)
            if let store = storage as? SecretStore {
                // The install's anonymous id exists from the first launch (a PostgreSQL store has no profile).
                _ = try await context.session(options, key: .whenVaultExists).restore()
                ErrorReport.note("Created an empty vault in \(store.directory).")
            } else if case let .postgres(_, storeName) = try context.storeSelection(options) {
                ErrorReport.note("Created the empty vault '\(TerminalText.escaped(storeName))' in the PostgreSQL database.")
            }
        }
    }
}
