import ArgumentParser
import CredentialVault

extension VaultCommand {
    /// `vault history NAME`: an entry's versions (never a value); `vault history --limit N` sets how many are kept.
    struct History: ContextCommand {
        static let configuration = CommandConfiguration(
            commandName: "history",
            abstract: "List an entry's earlier versions (number, time, size, writer), or set how many are kept.",
            discussion: """
                A replaced or removed value is kept, sealed inside the vault file, as an earlier version: \
                at most the vault's limit per entry (10 unless set with --limit), the oldest dropped first. \
                Tokens and the session's entries keep none. 'vault restore NAME --version N' brings one \
                back. Earlier versions are never entries: list, get, inspect and the agent do not show \
                them. Needs the vault file in format 3 (a PostgreSQL store keeps no history). Opens the \
                vault with its key, not through the agent.
                """
        )

        @OptionGroup var options: VaultOptions

        @Argument(help: "The entry's name.", completion: EntryNameCompletion.kind)
        var name: String?

        @Option(help: ArgumentHelp("Keep at most N earlier versions per entry from now on (0 … 100; 0 keeps none and drops those kept).",
                                   valueName: "N"))
        var limit: Int?

        @Flag(help: "Print a JSON object: name, owner, limit, versions (see docs/CLI.md).")
        var json = false

        @Option(help: .hidden)
        var owner = ""

        func validate() throws {
            if name == nil, limit == nil { throw ValidationError("give an entry's NAME, or --limit N") }
            if name != nil, limit != nil { throw ValidationError("give either NAME or --limit, not both") }
        }

        func run(_ context: CommandContext) async throws {
            try Self.refusePostgres(context, options)
            let store = try await context.storage(.vaultFile(), options)
            if let limit {
                try store.setHistoryLimit(limit)
                if json {
                    try StandardIO.printOutput(TextLayout.json(.object(["limit": .integer(Int128(limit))])))
                } else {
                    ErrorReport.note("The vault keeps at most \(limit) earlier version\(limit == 1 ? "" : "s") per entry.")
                }
                return
            }
            let history = try store.history(named: name ?? "", owner: owner)
            try StandardIO.printOutput(json ? TextLayout.json(Self.jsonValue(history)) : Self.table(history))
        }

        /// History is a feature of the vault file: a PostgreSQL store is refused with that reason.
        static func refusePostgres(_ context: CommandContext, _ options: VaultOptions) throws {
            guard case .postgres = try context.storeSelection(options) else { return }
            throw VaultError(.invalidInput, "a PostgreSQL store keeps no history of entries; only a vault file does",
                             fix: "keep earlier values in a vault file, or rely on the database's own backups")
        }

        /// VERSION WRITTEN REPLACED SIZE WRITER, newest first.
        static func table(_ history: EntryHistory) -> String {
            let rows = history.versions.map { version in
                ["\(version.version)\(version.isCurrent ? " (current)" : "")",
                 RFC3339.string(from: version.writtenAt),
                 version.replacedAt.map { RFC3339.string(from: $0) } ?? "-",
                 "\(version.byteCount)",
                 version.writer.isEmpty ? "unknown" : version.writer]
            }
            return TextLayout.table(header: ["VERSION", "WRITTEN", "REPLACED", "SIZE", "WRITER"], rows: rows)
                + "(keeping at most \(history.limit) earlier version\(history.limit == 1 ? "" : "s") per entry)\n"
        }

        /// `{"name", "owner", "limit", "versions": [{"version", "time", "replacedAt", "size", "writer", "kind", "current"}]}`.
        static func jsonValue(_ history: EntryHistory) -> JSONValue {
            .object([
                "name": .string(history.name),
                "owner": .string(history.owner),
                "limit": .integer(Int128(history.limit)),
                "versions": .array(history.versions.map { version in
                    .object([
                        "version": .integer(Int128(version.version)),
                        "time": .string(RFC3339.string(from: version.writtenAt)),
                        "replacedAt": version.replacedAt.map { .string(RFC3339.string(from: $0)) } ?? .null,
                        "size": .integer(Int128(version.byteCount)),
                        "writer": version.writer.isEmpty ? .null : .string(version.writer),
                        "kind": .string(version.kind.rawValue),
                        "current": .bool(version.isCurrent),
                    ])
                }),
            ])
        }
    }

    /// `vault restore NAME --version N`: brings an earlier version back as a new write.
    struct Restore: ContextCommand {
        static let configuration = CommandConfiguration(
            commandName: "restore",
            abstract: "Bring back an earlier version of an entry as a new write (the current value becomes an earlier version).",
            discussion: """
                The version numbers are those 'vault history NAME' lists. The restored value is a new \
                version, written by "restore of version N"; the value it replaces is kept like any \
                replaced value. The entry comes back even after 'vault rm'. Nothing is printed but a note.
                """
        )

        @OptionGroup var options: VaultOptions

        @Argument(help: "The entry's name.", completion: EntryNameCompletion.kind)
        var name: String

        @Option(help: ArgumentHelp("The version to bring back (from 'vault history NAME').", valueName: "N"))
        var version: Int

        @Option(help: .hidden)
        var owner = ""

        func run(_ context: CommandContext) async throws {
            try ReservedEntryNames.check(name: name, owner: owner, for: .store)
            try History.refusePostgres(context, options)
            let store = try await context.storage(.vaultFile(), options)
            let stored = try store.restore(named: name, owner: owner, version: version)
            ErrorReport.note("Restored version \(version) of '\(TerminalText.escaped(name))' (\(stored.secretByteCount) byte\(stored.secretByteCount == 1 ? "" : "s")).")
        }
    }
}
