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
            let storage = try await context.openStorage(options)
            let report = try await storage.verifyAll()
            let file = storage as? SecretStore
            let path = file?.vaultPath
            // The vault file's format (a PostgreSQL store has none): format 2 shows where each secret ends.
            let format = try file?.formatVersion()
            try StandardIO.printOutput(json ? TextLayout.json(Self.json(report, format: format)) : Self.text(report, format: format))
            guard report.isIntact else {
                throw VaultError(.tampered, "\(report.failures.count) of \(report.entriesChecked) entries failed their integrity check",
                                 path: path, fix: "restore the vault from a backup, or remove the damaged entries with 'vault rm'")
            }
        }

        /// The report's JSON, with `format` (the vault file's major version) for a vault file.
        static func json(_ report: VerificationReport, format: Int?) -> JSONValue {
            guard let format, case .object(var members) = report.jsonValue else { return report.jsonValue }
            members["format"] = .integer(Int128(format))
            return .object(members)
        }

        /// One line per failed entry, then a summary line (and, for a format 1 or 2 file, how to move on).
        static func text(_ report: VerificationReport, format: Int? = nil) -> String {
            let failed = report.failures.map { failure in
                let name = (failure.owner.isEmpty ? "" : failure.owner + "/") + failure.name
                return "FAILED \(TerminalText.escaped(name)): \(TerminalText.escaped(failure.error.message))\n"
            }
            let checked = report.entriesChecked == 1 ? "1 entry" : "\(report.entriesChecked) entries"
            let verdict = report.isIntact ? "all authentic" : "\(report.failures.count) failed"
            let summary = failed.joined() + "vault \(report.vaultID), generation \(report.generation): \(checked) checked, \(verdict)\n"
            guard let format, format < 3 else { return summary }
            return summary + "format \(format): the file shows where each secret ends; 'vault upgrade-format' moves it to format 3\n"
        }
    }
}
