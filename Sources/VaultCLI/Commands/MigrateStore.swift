import ArgumentParser
import CredentialVault
import FoundationEssentials

extension VaultCommand {
    /// `vault migrate-store --to STORE`: copies every entry of the selected store into another one,
    /// with the same key, in one transaction, then reads every entry back and compares it.
    struct MigrateStore: ContextCommand {
        static let configuration = CommandConfiguration(
            commandName: "migrate-store",
            abstract: "Copy every entry of this vault into another store (the vault file or PostgreSQL), with the same key.",
            discussion: """
                The source is the store the other options select (--store / VAULT_STORE, else the vault file in \
                --vault DIR); the destination is --to: a postgres:// URL, or 'file' for the vault file in --vault DIR. \
                The destination is created with the same key (refused if it exists, unless --into-existing), every \
                entry is written in one transaction with its owner, kind, label, expiry and times, and then every \
                entry is read back from the destination and compared byte for byte; the destination is verified as \
                a whole. The source is never changed: remove it with 'vault wipe' (file) once you trust the copy.
                """
        )

        @OptionGroup var options: VaultOptions

        @Option(help: ArgumentHelp("Where to copy to: postgres://USER@HOST:PORT/DATABASE, or 'file' (the vault file in --vault DIR).",
                                   valueName: "STORE"))
        var to: String

        @Option(name: .customLong("to-store-name"), help: ArgumentHelp(
            "With a PostgreSQL destination: the vault's name in the database (default: the source's --store-name, else 'default').",
            valueName: "NAME"))
        var toStoreName: String?

        @Flag(name: .customLong("into-existing"), help: "Copy into an existing vault opened by the same key; any name already there stops the copy before anything is written.")
        var intoExisting = false

        func run(_ context: CommandContext) async throws {
            let source = try context.storeSelection(options)
            let destination = try StoreSelection(store: to, storeName: toStoreName ?? options.storeName, environment: context.environment)
            guard source != destination else {
                throw VaultError(.invalidInput, "the source and the destination are the same store",
                                 fix: "select the source with --store (or VAULT_STORE) and the destination with --to")
            }
            let from = try await open(source, context: context)
            let entries = try await Self.readAll(from)
            let keptVersions = try (from as? SecretStore)?.keptVersionCount() ?? 0
            let into = try await destinationStorage(destination, context: context)
            _ = try await into.storeEntries(entries.map(NewEntry.init(copying:)), replace: false)
            try await Self.compare(entries, with: into)
            guard try await into.verifyAll().isIntact else {
                throw VaultError(.tampered, "the destination failed its integrity check after the copy",
                                 fix: "do not use the copy; the source is unchanged")
            }
            ErrorReport.note("Copied \(entries.count) entr\(entries.count == 1 ? "y" : "ies") from the \(from.storageKind.rawValue) "
                             + "store to the \(into.storageKind.rawValue) store; each was read back and matched. The source is unchanged.")
            if keptVersions > 0, destination.postgres != nil {
                ErrorReport.note("warning: the \(keptVersions) earlier version\(keptVersions == 1 ? "" : "s") kept as history in the vault file "
                                    + "\(keptVersions == 1 ? "was" : "were") not copied: a PostgreSQL store keeps no history "
                                    + "(the source still has them; 'vault history NAME' lists them there)")
            }
        }

        /// Every entry of `storage`, with its secret.
        static func readAll(_ storage: any SecretStorage) async throws -> [VaultEntry] {
            var entries: [VaultEntry] = []
            for metadata in try await storage.listEntries(owner: nil) {
                entries.append(try await storage.readEntry(named: metadata.name, owner: metadata.owner))
            }
            return entries
        }

        /// Reads every entry back from `storage` and compares it with the source's.
        static func compare(_ entries: [VaultEntry], with storage: any SecretStorage) async throws {
            let copied = try await storage.listEntries(owner: nil)
            guard copied.count >= entries.count else {
                throw VaultError(.tampered, "the destination lists \(copied.count) entries after the copy, not \(entries.count)",
                                 fix: "do not use the copy; the source is unchanged")
            }
            for entry in entries {
                let original = entry.metadata
                let copy = try await storage.readEntry(named: original.name, owner: original.owner)
                let same = copy.secret == entry.secret && copy.metadata.kind == original.kind && copy.metadata.label == original.label
                    && copy.metadata.expiresAt == original.expiresAt && copy.metadata.transferable == original.transferable
                    && copy.metadata.createdAt == original.createdAt && copy.metadata.updatedAt == original.updatedAt
                    && copy.metadata.attributes == original.attributes
                guard same else {
                    throw VaultError(.tampered, "the entry '\(TerminalText.escaped(original.name))' reads back differently from the destination",
                                     fix: "do not use the copy; the source is unchanged")
                }
            }
        }

        /// A store of this copy, opened through the context (one key for both, closed at the end).
        private func open(_ selection: StoreSelection, context: CommandContext) async throws -> any SecretStorage {
            guard let postgres = selection.postgres else { return try await context.storage(.vaultFileWhateverSelected(), options) }
            return try await context.storage(.postgres(url: postgres.url, name: postgres.storeName), options)
        }

        private func destinationStorage(_ selection: StoreSelection, context: CommandContext) async throws -> any SecretStorage {
            if intoExisting { return try await open(selection, context: context) }
            guard let postgres = selection.postgres else {
                // The key already opens the source: its strength was judged when it was set.
                return try await context.storage(.vaultFileWhateverSelected(.create, allowingWeakPassphrase: true), options)
            }
            return try await context.storage(.postgres(url: postgres.url, name: postgres.storeName, .create), options)
        }
    }
}
