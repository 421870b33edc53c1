import ArgumentParser
import CredentialVault

extension VaultCommand {
    /// `vault get NAME`: the secret's bytes on standard output, or on the clipboard with `--clip`.
    struct Get: ContextCommand {
        static let configuration = CommandConfiguration(
            commandName: "get",
            abstract: "Write the secret stored under NAME to standard output, exactly, with nothing added.",
            discussion: """
                A standard output that is closed or full is an error (exit 74), never a silent success.

                With --clip the secret goes to the clipboard instead (through wl-copy, xclip or xsel, \
                whichever is installed) and nothing is printed. After --clear-after (default 45s) a \
                background process empties the clipboard if it still holds the secret.
                """
        )

        @OptionGroup var options: VaultOptions

        @Argument(help: "The entry's name.", completion: EntryNameCompletion.kind)
        var name: String

        @Flag(help: "Copy the secret to the clipboard instead of printing it.")
        var clip = false

        @Option(name: .customLong("clear-after"), help: ArgumentHelp(
            "With --clip: empty the clipboard after DURATION (90s, 2m) if it still holds the secret; 0s: never.",
            valueName: "DURATION"), transform: HumanDuration.seconds(in:))
        var clearAfter: Int64?

        @Option(help: .hidden)
        var owner = ""

        func validate() throws {
            if clearAfter != nil, !clip { throw ValidationError("--clear-after goes with --clip") }
        }

        func run(_ context: CommandContext) async throws {
            try ReservedEntryNames.check(name: name, owner: owner, for: .read)
            // Find the clipboard before opening the vault: without one, fail before any passphrase is asked for.
            let clipboard = clip ? try Clipboard.find(environment: context.environment) : nil
            let secret = try await context.storage(.entries, options).readEntry(named: name, owner: owner).secret
            guard let clipboard else { return try StandardIO.printOutput(secret) }
            try clipboard.copy(secret)
            let seconds = clearAfter ?? 45
            if seconds > 0 { try ClipboardClearer.start(after: seconds, clipboard: clipboard, secret: secret) }
            ErrorReport.note("Copied '\(TerminalText.escaped(name))' to the clipboard (\(clipboard.tool.name))"
                             + (seconds > 0 ? "; it is cleared in \(seconds) s if still there." : "."))
        }
    }
}
