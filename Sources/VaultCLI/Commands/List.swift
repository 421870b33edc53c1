import ArgumentParser
import CredentialVault
import FoundationEssentials

extension VaultCommand {
    /// `vault list`: names and metadata, never secrets.
    struct List: ContextCommand {
        static let configuration = CommandConfiguration(
            commandName: "list",
            abstract: "List the entries' names and metadata (never their secrets)."
        )

        @OptionGroup var options: VaultOptions

        @Flag(help: "Print a JSON array (see docs/CLI.md).")
        var json = false

        @Option(name: .customLong("expiring-within"), help: ArgumentHelp(
            "Only entries that expire within DURATION (90s, 15m, 1h30m, 7d), expired ones included.", valueName: "DURATION"),
                transform: HumanDuration.seconds(in:))
        var expiringWithin: Int64?

        @Option(help: .hidden)
        var owner: String?

        func run(_ context: CommandContext) async throws {
            let now = Date()
            // Tokens waiting for their revocation (SessionManager.keepForRevocation) are not entries of the user's.
            let entries = try await context.storage(.entries, options).listEntries(owner: owner)
                .filter { $0.owner != SessionManager.pendingRevocationOwner || owner != nil }
                .filter { entry in expiringWithin.map { entry.expires(within: TimeInterval($0), of: now) } ?? true }
            if json {
                try StandardIO.printOutput(bytes: EntryListJSON.render(entries, now: now) + [0x0A])
            } else if entries.isEmpty {
                ErrorReport.note("No entries.")
            } else {
                try StandardIO.printOutput(Self.table(entries, now: now))
            }
        }

        /// NAME KIND EXPIRY UPDATED LABEL, with OWNER first when any entry has one.
        static func table(_ entries: [EntryMetadata], now: Date) -> String {
            let showOwner = entries.contains { !$0.owner.isEmpty }
            let header = (showOwner ? ["OWNER"] : []) + ["NAME", "KIND", "EXPIRY", "UPDATED", "LABEL"]
            let rows = entries.map { entry in
                (showOwner ? [entry.owner] : []) + [
                    entry.name, entry.kind.rawValue, entry.expiryStatus(at: now).description,
                    String(RFC3339.string(from: entry.updatedAt).prefix(16)).replacing("T", with: " ") + "Z",
                    entry.label ?? "",
                ]
            }
            return TextLayout.table(header: header, rows: rows)
        }
    }
}
