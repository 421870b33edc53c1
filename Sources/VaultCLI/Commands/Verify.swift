import ArgumentParser
import CredentialVault

extension VaultCommand {
    /// `vault verify`: authenticates every entry.
    struct Verify: ContextCommand {
        static let configuration = CommandConfiguration(
            commandName: "verify",
            abstract: "Authenticate the header, the index and every secret; exit 65 when anything fails."
        )

        @OptionGroup var options: VaultOptions

        @Flag(help: "Print a JSON object (see docs/CLI.md).")
        var json = false

        func run(_ context: CommandContext) async throws {
            let storage = try await context.storage(.selected(), options)
            let report = try await storage.verifyAll()
            let path = (storage as? SecretStore)?.vaultPath
            try StandardIO.printOutput(json ? TextLayout.json(report.jsonValue) : Self.text(report))
            guard report.isIntact else {
                throw VaultError(.tampered, "\(report.failures.count) of \(report.entriesChecked) entries failed their integrity check",
                                 path: path, fix: "restore the vault from a backup, or remove the damaged entries with 'vault rm'")
            }
        }

        /// One line per failed entry, then a summary line (and, for a file in an older format, how to move on).
        static func text(_ report: VerificationReport) -> String {
            let failed = report.failures.map { failure in
                let name = (failure.owner.isEmpty ? "" : failure.owner + "/") + failure.name
                return "FAILED \(TerminalText.escaped(name)): \(TerminalText.escaped(failure.error.message))\n"
            }
            let checked = report.entriesChecked == 1 ? "1 entry" : "\(report.entriesChecked) entries"
            let verdict = report.isIntact ? "all authentic" : "\(report.failures.count) failed"
            let summary = failed.joined() + "vault \(report.vaultID), generation \(report.generation): \(checked) checked, \(verdict)\n"
            guard let format = report.formatVersion, format < SecretStore.currentFormatVersion else { return summary }
            return summary + "format \(format): the file shows where each secret ends; "
                + "'vault upgrade-format' moves it to format \(SecretStore.currentFormatVersion)\n"
        }
    }
}
