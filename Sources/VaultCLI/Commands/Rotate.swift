import ArgumentParser
import CredentialVault

extension VaultCommand {
    /// `vault rotate`: a new data key.
    struct Rotate: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rotate",
            abstract: "Make a new data key and re-encrypt every secret under it (the passphrase or key file stays)."
        )

        @OptionGroup var options: VaultOptions

        func run() throws {
            let store = try options.openStore()
            try store.rotate()
            let count = try store.list().count
            ErrorReport.note("Rotated the data key; \(count) \(count == 1 ? "entry" : "entries") re-encrypted.")
        }
    }
}
