import ArgumentParser
import CredentialVault
import FoundationEssentials

extension VaultCommand {
    /// `vault inspect NAME`: metadata, expiry, a masked preview, JWT claims; never the secret.
    struct Inspect: ContextCommand {
        static let configuration = CommandConfiguration(
            commandName: "inspect",
            abstract: "Show an entry's metadata, expiry, a masked preview and, for a JWT, its header and claims.",
            discussion: """
                Never shows the whole secret: the preview is at most 4 characters and 1/8 of the secret, \
                and nothing for secrets under 12 bytes. A JWT's signature is not shown (nor checked).
                """
        )

        @OptionGroup var options: VaultOptions

        @Argument(help: "The entry's name.", completion: EntryNameCompletion.kindIncludingSession)
        var name: String

        @Flag(help: "Print a JSON object (see docs/CLI.md).")
        var json = false

        @Option(help: .hidden)
        var owner = ""

        func run(_ context: CommandContext) async throws {
            let entry = try await context.storage(.entries, options).readEntry(named: name, owner: owner)
            let inspection = EntryInspection(entry, now: Date())
            try StandardIO.printOutput(json ? TextLayout.json(inspection.jsonValue) : TextLayout.fields(inspection.fields))
        }
    }
}
