import ArgumentParser
import CredentialVault

extension VaultCommand {
    /// `vault rotate`: a new data key.
    struct Rotate: ContextCommand {
        static let configuration = CommandConfiguration(
            commandName: "rotate",
            abstract: "Make a new data key and re-encrypt every secret under it (the passphrase or key file stays).",
            discussion: """
                Protects against a leaked data key (for example from a memory dump of a process that had the \
                vault open): the leaked data key decrypts nothing written from now on. It does not protect \
                against a leaked passphrase or key file, which opens the new data key too; use `vault passwd` \
                for that. Old copies of the vault keep their old data key.
                """
        )

        @OptionGroup var options: VaultOptions

        func run(_ context: CommandContext) async throws {
            let store = try await context.storage(.vaultFile(), options)
            try store.rotate()
            let count = try store.list().count
            ErrorReport.note("Rotated the data key; \(count) \(count == 1 ? "entry" : "entries") re-encrypted.")
        }
    }
}
