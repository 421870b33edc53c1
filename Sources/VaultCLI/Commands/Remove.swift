import ArgumentParser
import CredentialVault

extension VaultCommand {
    /// `vault rm NAME`.
    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rm",
            abstract: "Remove the entry NAME."
        )

        @OptionGroup var options: VaultOptions

        @Argument(help: "The entry's name.", completion: EntryNameCompletion.kind)
        var name: String

        @Option(help: .hidden)
        var owner = ""

        func run() async throws {
            try await options.withStorage { try await $0.removeEntry(named: name, owner: owner) }
            ErrorReport.note("Removed '\(TerminalText.escaped(name))'.")
        }
    }
}
