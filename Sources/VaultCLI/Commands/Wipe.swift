import ArgumentParser
import CredentialVault
import FoundationEssentials

extension VaultCommand {
    /// `vault wipe`: destroys the vault file, and with `--destroy-key-file` its key file.
    struct Wipe: ContextCommand {
        static let configuration = CommandConfiguration(
            commandName: "wipe",
            abstract: "Destroy every credential: overwrite the vault file and its wrapped key, then remove it.",
            discussion: """
                Needs no key, so a vault whose passphrase is lost can still be destroyed. Without --yes it asks \
                on the terminal (type 'wipe'); without a terminal it refuses. The folder and file checks of every \
                other command apply: a vault in a folder others can write to, or a vault file with another hard \
                link, is refused.

                What it cannot erase: every earlier version of the vault was a separate file, replaced by \
                rename; the file system freed its blocks without erasing them, and copy-on-write file systems, \
                journals, snapshots, backups and SSD remapping keep more. Those copies still open with the same \
                passphrase or key file. --destroy-key-file also overwrites and removes the key file (given by \
                --key-file or VAULT_KEY_FILE), which makes every such copy undecryptable: the only erase that \
                holds. A passphrase cannot be destroyed.

                On a PostgreSQL store (--store, VAULT_STORE) it deletes the vault's rows and its state row \
                (with the wrapped data key) in one transaction; other vaults in the database stay. The database \
                keeps deleted rows until VACUUM, in its write-ahead log, on replicas and in backups: the same \
                limits, and the same answer (--destroy-key-file).
                """
        )

        @OptionGroup var options: VaultOptions

        @Flag(help: "Do not ask for confirmation.")
        var yes = false

        @Flag(help: "Also remove the profile (signed-in user, guest id, settings).")
        var all = false

        @Flag(name: .customLong("destroy-key-file"), help: ArgumentHelp(
            "Also overwrite and remove the key file (--key-file or VAULT_KEY_FILE): old copies of the vault become undecryptable."))
        var destroyKeyFile = false

        func run(_ context: CommandContext) async throws {
            if let postgres = try context.storeSelection(options).postgres {
                return try await wipePostgres(url: postgres.url, storeName: postgres.storeName, context: context)
            }
            let directory = options.directory
            let keyFile = try destroyKeyFile ? Self.keyFileToDestroy(context.keySource(options)) : nil
            if !yes { try Self.confirm(directory: directory, keyFile: keyFile, terminal: options.terminal()) }
            let wiped = try SecretStore.wipe(in: directory, lockTimeout: options.lockTimeout)
            let profiles = ProfileStore(directory: directory, lockTimeout: options.lockTimeout)
            // Removed whatever its contents: a corrupt profile is exactly what --all must clear.
            let hadProfile = all && FileManager.default.fileExists(atPath: profiles.path)
            if hadProfile { try profiles.remove() }
            if let keyFile { try SecretStore.destroyKeyFile(at: keyFile) }
            guard wiped || hadProfile || keyFile != nil else { throw VaultError.vaultNotFound(path: directory) }
            ErrorReport.note(wiped ? "Wiped the vault in \(directory)." : "No vault in \(directory)"
                             + (hadProfile ? "; removed the profile." : "."))
            if let keyFile {
                ErrorReport.note("Destroyed the key file \(keyFile): copies of vaults it opened can no longer be decrypted.")
            } else if wiped {
                ErrorReport.note("Earlier copies of the vault (freed disk blocks, snapshots, backups) still open with its key; "
                                 + "--destroy-key-file makes them undecryptable when the vault uses a key file.")
            }
        }

        /// `wipe` on a PostgreSQL store: the vault's rows, then (with `--destroy-key-file`) the key file.
        private func wipePostgres(url: String, storeName: String, context: CommandContext) async throws {
            guard !all else { throw UsageError("--all removes the profile of a vault file; a PostgreSQL store has none") }
            let keyFile = try destroyKeyFile ? Self.keyFileToDestroy(context.keySource(options)) : nil
            let support = try context.requirePostgres()
            let name = "the PostgreSQL vault '\(TerminalText.escaped(storeName))'"
            if !yes { try Self.confirm(directory: name, keyFile: keyFile, terminal: options.terminal()) }
            let wiped = try await support.destroy(url: url, storeName: storeName, timeout: options.operationTimeout)
            if let keyFile { try SecretStore.destroyKeyFile(at: keyFile) }
            guard wiped || keyFile != nil else {
                throw VaultError(.notFound, "no vault named '\(TerminalText.escaped(storeName))' in this database",
                                 fix: "check the store name")
            }
            ErrorReport.note(wiped ? "Wiped \(name)." : "No vault named '\(TerminalText.escaped(storeName))' in the database.")
            if let keyFile {
                ErrorReport.note("Destroyed the key file \(keyFile): copies of vaults it opened can no longer be decrypted.")
            } else {
                ErrorReport.note("Deleted rows stay in the database until VACUUM, in its write-ahead log, replicas and backups, "
                                 + "and still open with the key; --destroy-key-file makes them undecryptable.")
            }
        }

        /// The key file `--destroy-key-file` names: the key source's, when it is a key file
        /// (`--key-file`, else `VAULT_KEY_FILE`, unless `--passphrase-file` comes first).
        /// - Throws: `UsageError` when the key source is not a key file (nothing is wiped then).
        static func keyFileToDestroy(_ source: KeySource) throws -> String {
            if let path = source.keyFilePath { return path }
            throw UsageError("--destroy-key-file needs the key file: give --key-file FILE or set VAULT_KEY_FILE; nothing was wiped",
                             hint: "a vault opened by a passphrase has no key file to destroy")
        }

        /// Asks for the word "wipe" on the terminal.
        /// - Throws: `UsageError` without a terminal or when the answer is anything else.
        static func confirm(directory: String, keyFile: String? = nil, terminal: Terminal?) throws {
            guard let terminal else {
                throw UsageError("refusing to wipe without --yes: there is no terminal to confirm on", hint: "add --yes")
            }
            let what = keyFile.map { "every credential in \(directory) and the key file \($0)" } ?? "every credential in \(directory)"
            let answer = try terminal.readLine(prompt: "This destroys \(what). Type 'wipe' to go on: ")
            guard answer == "wipe" else { throw UsageError("not confirmed; nothing was wiped") }
        }
    }
}
