import ArgumentParser
import CredentialVault

extension VaultCommand {
    /// `vault keygen FILE`: a new random key file.
    struct Keygen: ContextCommand {
        static let configuration = CommandConfiguration(
            commandName: "keygen",
            abstract: "Create a new random 32-byte key file (mode 0600); never overwrites.",
            discussion: """
                Missing folders on the way are made with mode 0700 (existing ones are left as they are). \
                Keep a copy somewhere safe: a vault made with this key cannot be opened without it.
                """
        )

        @Argument(help: ArgumentHelp("Where to write the key.", valueName: "FILE"), completion: .file())
        var file: String

        func run(_ context: CommandContext) async throws {
            try VaultKey.generateKeyFile(path: file, createMissingFolders: true)
            ErrorReport.note("Created key file \(file) (32 bytes, mode 0600).")
        }
    }
}
