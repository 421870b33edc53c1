import ArgumentParser
import CredentialVault

extension VaultCommand {
    /// `vault rm NAME`.
    struct Remove: ContextCommand {
        static let configuration = CommandConfiguration(
            commandName: "rm",
            abstract: "Remove the entry NAME."
        )

        @OptionGroup var options: VaultOptions

        @Argument(help: "The entry's name.", completion: EntryNameCompletion.kind)
        var name: String

        @Option(help: .hidden)
        var owner = ""

        func run(_ context: CommandContext) async throws {
            try ReservedEntryNames.check(name: name, owner: owner, for: .remove)
            try await context.storage(.entries, options).removeEntry(named: name, owner: owner)
            ErrorReport.note("Removed '\(TerminalText.escaped(name))'.")
        }
    }
}
