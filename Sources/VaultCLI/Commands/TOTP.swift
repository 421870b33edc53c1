import ArgumentParser
import CredentialVault
import FoundationEssentials

extension VaultCommand {
    /// `vault totp NAME`: the current one-time code of a `totp` entry; never its seed.
    struct TOTP: ContextCommand {
        static let configuration = CommandConfiguration(
            commandName: "totp",
            abstract: "Print the time-based one-time code (RFC 6238) of the totp entry NAME.",
            discussion: """
                The entry holds an otpauth://totp/ URI (store one with 'vault add NAME --kind totp', \
                which reads it from standard input). The code is computed from its seed with \
                HMAC-SHA1, -SHA256 or -SHA512 as the URI says; the seed is never printed.

                Text: the code and a line break. JSON: {"code": "123456", "validUntil": "RFC 3339"}, \
                validUntil being the end of the code's time step.
                """
        )

        @OptionGroup var options: VaultOptions

        @Argument(help: "The entry's name.", completion: EntryNameCompletion.kind)
        var name: String

        @Option(help: ArgumentHelp("The code at TIME instead of now, in RFC 3339 (2026-01-31T08:15:00Z).", valueName: "TIME"),
                transform: Date.init(parsingRFC3339:))
        var at: Date?

        @Flag(help: "Print a JSON object with code and validUntil.")
        var json = false

        @Option(help: .hidden)
        var owner = ""

        func run(_ context: CommandContext) async throws {
            try ReservedEntryNames.check(name: name, owner: owner, for: .read)
            let entry = try await context.storage(.entries, options).readEntry(named: name, owner: owner)
            guard entry.metadata.kind == .totp else {
                throw VaultError(.invalidInput, "'\(TerminalText.escaped(name))' is a \(entry.metadata.kind) entry, not a totp one",
                                 fix: "store its otpauth://totp/ URI with 'vault add \(VaultError.shellQuoted(name)) --kind totp --replace'")
            }
            let parameters = try OTPAuthURI(parsing: entry.secret)
            let code: OneTimeCode
            do {
                code = try TOTPGenerator.code(for: parameters, at: at ?? Date())
            } catch let error as VaultError where error.code == .invalidInput && at != nil {
                throw VaultError(.invalidInput, "--at: \(error.message)", fix: "give a time between 1970 and the end of the year 9999")
            }
            if json {
                try StandardIO.printOutput(TextLayout.json(.object(["code": .string(code.code),
                                                                    "validUntil": .string(RFC3339.string(from: code.validUntil))])))
            } else {
                try StandardIO.printOutput(code.code + "\n")
            }
        }
    }
}
