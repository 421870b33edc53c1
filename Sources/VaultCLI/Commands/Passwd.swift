import ArgumentParser
import CredentialVault

extension VaultCommand {
    /// `vault passwd`: a new passphrase or key file.
    struct Passwd: ContextCommand {
        static let configuration = CommandConfiguration(
            commandName: "passwd",
            abstract: "Change the passphrase or key file that opens the vault, and its data key.",
            discussion: """
                Makes a new data key and re-encrypts every secret under it, wrapped by the new key, in one \
                write. Protects against a leaked or stolen old passphrase or key file: from now on the old key, \
                even together with an old copy of the vault (a backup), can neither read nor forge anything \
                written after the change. It does not protect old copies themselves: whoever holds an old copy \
                and the old key still reads what that copy held, so destroy old key files and backups you no \
                longer trust.

                The new key is the first of: --new-key-file, --new-passphrase-file, $VAULT_NEW_PASSPHRASE, \
                a prompt on the terminal (asked twice). A new passphrase shorter than 12 bytes is refused \
                unless --weak-passphrase is given.
                """
        )

        @OptionGroup var options: VaultOptions

        @Option(name: .customLong("new-key-file"), help: ArgumentHelp("Open the vault with this key file from now on.", valueName: "FILE"), completion: .file())
        var newKeyFile: String?

        @Option(name: .customLong("new-passphrase-file"), help: ArgumentHelp(
            "Open the vault with the passphrase in FILE from now on.", valueName: "FILE"), completion: .file())
        var newPassphraseFile: String?

        @Flag(name: .customLong("weak-passphrase"), help: "Accept a new passphrase shorter than 12 bytes.")
        var weakPassphrase = false

        func validate() throws {
            if newKeyFile != nil, newPassphraseFile != nil {
                throw ValidationError("give either --new-key-file or --new-passphrase-file, not both")
            }
        }

        func run(_ context: CommandContext) async throws {
            let store = try await context.storage(.vaultFile(allowingWeakPassphrase: weakPassphrase), options)
            try store.changeKey(to: context.newKey(options, keyFile: newKeyFile, passphraseFile: newPassphraseFile))
            ErrorReport.note("Changed the key of the vault in \(store.directory).")
        }
    }
}
