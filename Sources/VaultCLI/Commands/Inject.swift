import ArgumentParser
import CredentialVault

extension VaultCommand {
    /// `vault inject -i TEMPLATE [-o OUT]`: a config file with its `{{ vault://… }}` placeholders filled in.
    struct Inject: ContextCommand {
        static let configuration = CommandConfiguration(
            commandName: "inject",
            abstract: "Fill the {{ vault://NAME }} placeholders of a template with secrets.",
            discussion: """
                Every {{ vault://NAME }} or {{ vault://NAME?owner=OWNER }} (spaces inside the braces allowed, \
                on one line) is replaced by the secret; every other {{ passes through untouched, so Go, Helm \
                and Mustache templates keep working. A reference that names no entry stops before anything \
                is written (66).

                With -o the result is written to OUT with mode 0600, atomically (a temporary file, fsync, \
                rename): a reader sees the old file or the whole new one, and on any error nothing is written. \
                OUT is refused when it is a symlink or its folder is writable by others. Without -o the \
                result goes to standard output.

                Example (config.tpl holds  password: "{{ vault://prod/db-password }}"):
                  vault inject -i config.tpl -o config.yaml
                """
        )

        @OptionGroup var options: VaultOptions

        @Option(name: [.customShort("i"), .customLong("in")], help: ArgumentHelp("The template.", valueName: "TEMPLATE"),
                completion: .file())
        var template: String

        @Option(name: [.customShort("o"), .customLong("out")], help: ArgumentHelp("Write the result here (0600, atomically).",
                                                                                   valueName: "OUT"),
                completion: .file())
        var output: String?

        func run(_ context: CommandContext) async throws {
            let template = try SecretTemplate(SecureFileSystem.readInputFile(self.template, maxBytes: Self.maximumTemplateBytes),
                                              path: self.template)
            var secrets: [SecretReference: SecureBytes] = [:]
            if !template.placeholders.isEmpty {
                let resolver = ReferenceResolver(storage: try await context.storage(.entries, options))
                for placeholder in template.placeholders where secrets[placeholder.reference] == nil {
                    secrets[placeholder.reference] = try await resolver.secret(
                        for: placeholder.reference, origin: "\(self.template), line \(placeholder.line)")
                }
            }
            let result = try template.rendered(with: secrets)
            guard let output else { return try StandardIO.printOutput(result) }
            try SecureFileSystem.writeSecretOutput(output, contents: result)
            let count = template.placeholders.count
            ErrorReport.note("Wrote \(TerminalText.escaped(output)) (\(count) placeholder\(count == 1 ? "" : "s") filled, mode 0600).")
        }

        /// The largest template read (16 MiB).
        static let maximumTemplateBytes = 16 * 1024 * 1024
    }
}
