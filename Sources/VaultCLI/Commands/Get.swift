import ArgumentParser
import CredentialVault

extension VaultCommand {
    /// `vault get NAME`: the secret's bytes on standard output.
    struct Get: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "get",
            abstract: "Write the secret stored under NAME to standard output, exactly, with nothing added.",
            discussion: "A standard output that is closed or full is an error (exit 74), never a silent success."
        )

        @OptionGroup var options: VaultOptions

        @Argument(help: "The entry's name.", completion: EntryNameCompletion.kind)
        var name: String

        @Option(help: .hidden)
        var owner = ""

        func run() throws {
            let secret = try options.openStore().secret(named: name, owner: owner)
            try StandardIO.printOutput(secret)
        }
    }
}
