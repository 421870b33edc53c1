import ArgumentParser
import CredentialVault
import FoundationEssentials

extension VaultCommand {
    /// `vault add NAME`: stores a secret read from standard input.
    struct Add: ContextCommand {
        static let configuration = CommandConfiguration(
            commandName: "add",
            abstract: "Store a secret, read from standard input, under NAME.",
            discussion: """
                The secret is every byte of standard input, exactly: binary safe, a trailing newline is kept. \
                When standard input is a terminal, the secret is typed with echo off and the final newline \
                is dropped. It is never taken from an argument.

                Without --expires-at or --expires-in, a JWT's 'exp' claim is the expiry.

                With --kind totp the secret is an otpauth://totp/ URI (seed in base32, algorithm \
                SHA1/SHA256/SHA512, digits 6-8, period in seconds); a malformed one is refused (exit 64) \
                naming the parameter, and nothing is stored. 'vault totp NAME' prints its codes.

                With --generate the secret is a new random password (or with --words a passphrase, see \
                'vault generate') that is stored without being shown: nothing is read from standard input \
                and the secret never reaches a terminal, a pipe or an argument. The kind is then \
                password unless --kind says otherwise.
                """
        )

        @OptionGroup var options: VaultOptions

        @Argument(help: "The entry's name.")
        var name: String

        @Option(help: "A free-text label.")
        var label: String?

        @Option(help: ArgumentHelp("What the secret is: \(EntryKind.acceptedNames) (access-token etc. work too).",
                                   valueName: "KIND"),
                completion: .list(EntryKind.allCases.map(\.rawValue)), transform: EntryKind.init(parsing:))
        var kind: EntryKind?

        @Option(name: .customLong("expires-at"), help: ArgumentHelp(
            "When the secret expires, in RFC 3339 (2026-01-31T08:15:00Z).", valueName: "TIME"),
                transform: Date.init(parsingRFC3339:))
        var expiresAt: Date?

        @Option(name: .customLong("expires-in"), help: ArgumentHelp(
            "When the secret expires, from now: 90s, 15m, 1h30m, 7d.", valueName: "DURATION"),
                transform: HumanDuration.seconds(in:))
        var expiresIn: Int64?

        @Option(name: .customLong("attribute"), help: ArgumentHelp(
            "An attribute NAME=VALUE, sealed with the entry's metadata (repeat for more; at most 64).", valueName: "NAME=VALUE"))
        var attributeArguments: [String] = []

        @Flag(help: "Replace an existing entry of that name (its creation date is kept).")
        var replace = false

        @Flag(help: "Store it as an item of the current guest: it moves to the account on 'vault signin'.")
        var guest = false

        @Flag(name: .customLong("non-transferable"), help: "With --guest: the item stays with the guest on sign-in (like consumables).")
        var nonTransferable = false

        @Flag(help: "Store a newly generated password (or passphrase, with --words) instead of reading standard input; it is not shown.")
        var generate = false

        @OptionGroup(title: "Generated secret (with --generate)")
        var recipe: SecretRecipeOptions

        @Option(help: .hidden)
        var owner = ""

        func validate() throws {
            if recipe.isGiven, !generate { throw ValidationError("--length, --charset, --words and --separator go with --generate") }
            if generate, kind == .totp { throw ValidationError("--generate makes a password, not a TOTP seed: give the otpauth URI on standard input") }
            if expiresAt != nil, expiresIn != nil { throw ValidationError("give either --expires-at or --expires-in, not both") }
            if nonTransferable, !guest { throw ValidationError("--non-transferable goes with --guest") }
            if guest, !owner.isEmpty { throw ValidationError("give either --guest or --owner, not both") }
            _ = try attributes
        }

        /// The `--attribute NAME=VALUE` options as a map: split at the first '=', no name twice.
        var attributes: [String: String] {
            get throws {
                var attributes: [String: String] = [:]
                for argument in attributeArguments {
                    guard let equals = argument.firstIndex(of: "="), equals != argument.startIndex else {
                        throw ValidationError("--attribute takes NAME=VALUE with a non-empty NAME, not '\(TerminalText.escaped(argument))'")
                    }
                    let name = String(argument[..<equals])
                    guard attributes.updateValue(String(argument[argument.index(after: equals)...]), forKey: name) == nil else {
                        throw ValidationError("--attribute gives '\(TerminalText.escaped(name))' twice")
                    }
                }
                return attributes
            }
        }

        func run(_ context: CommandContext) async throws {
            try ReservedEntryNames.check(name: name, owner: owner, for: .store)
            if guest { try context.requireFileStore(options) }
            let storage = try await context.storage(.entries, options)
            let owner = try guest ? Self.guestOwner(in: options.directory) : self.owner
            let kind = self.kind ?? (generate ? .password : .generic)
            let recipe = generate ? try self.recipe.recipe() : nil
            let secret = try recipe.map(SecretGenerator.generate) ?? SecretInput.read(for: name, allowPrompt: !options.noPrompt)
            // Refused before anything is written: the error names the parameter, never the seed.
            if kind == .totp { _ = try OTPAuthURI(parsing: secret) }
            let expiry = expiresAt ?? expiresIn.map { Date().addingTimeInterval(TimeInterval($0)) } ?? JWT.expiry(of: secret)
            let stored = try await storage.storeEntry(NewEntry(name: name, owner: owner, secret: secret, kind: kind, label: label,
                                                               expiresAt: expiry, transferable: !nonTransferable,
                                                               attributes: try attributes),
                                                      replace: replace, writer: .add)
            ErrorReport.note("Stored '\(TerminalText.escaped(name))' (\(stored.kind), \(stored.secretByteCount) byte\(stored.secretByteCount == 1 ? "" : "s"), \(stored.expiryStatus(at: Date())))"
                             + (recipe.map { ": a generated \($0.summary)." } ?? "."))
        }
    }
}

extension VaultCommand.Add {
    /// The current guest's namespace; guest mode must be on.
    static func guestOwner(in directory: String) throws -> String {
        let profile = try ProfileStore(directory: directory).load()
        guard profile?.user == nil, let anonymousID = profile?.anonymousID else {
            throw VaultError(.invalidInput, profile?.user != nil ? "someone is signed in, so there is no guest to add items for"
                                                                  : "guest mode is not on yet", fix: "run 'vault guest' first")
        }
        return SessionNamespaces.guest(anonymousID)
    }
}

extension EntryKind {
    /// Parses `--kind`, for ArgumentParser's `transform:`.
    init(parsing text: String) throws {
        guard let kind = EntryKind(userInput: text) else {
            throw VaultError(.invalidInput, "'\(text)' is not a kind; use one of \(EntryKind.acceptedNames)")
        }
        self = kind
    }
}

extension Date {
    /// Parses `--expires-at`, for ArgumentParser's `transform:`.
    init(parsingRFC3339 text: String) throws {
        guard let date = RFC3339.date(from: text) else {
            throw VaultError(.invalidInput, "'\(text)' is not an RFC 3339 time such as 2026-01-31T08:15:00Z")
        }
        self = date
    }
}
