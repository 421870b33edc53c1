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
        var kind: EntryKind = .generic

        @Option(name: .customLong("expires-at"), help: ArgumentHelp(
            "When the secret expires, in RFC 3339 (2026-01-31T08:15:00Z).", valueName: "TIME"),
                transform: Date.init(parsingRFC3339:))
        var expiresAt: Date?

        @Option(name: .customLong("expires-in"), help: ArgumentHelp(
            "When the secret expires, from now: 90s, 15m, 1h30m, 7d.", valueName: "DURATION"),
                transform: HumanDuration.seconds(in:))
        var expiresIn: Int64?

        @Flag(help: "Replace an existing entry of that name (its creation date is kept).")
        var replace = false

        @Flag(help: "Store it as an item of the current guest: it moves to the account on 'vault signin'.")
        var guest = false

        @Flag(name: .customLong("non-transferable"), help: "With --guest: the item stays with the guest on sign-in (like consumables).")
        var nonTransferable = false

        @Option(help: .hidden)
        var owner = ""

        func validate() throws {
            if expiresAt != nil, expiresIn != nil { throw ValidationError("give either --expires-at or --expires-in, not both") }
            if nonTransferable, !guest { throw ValidationError("--non-transferable goes with --guest") }
            if guest, !owner.isEmpty { throw ValidationError("give either --guest or --owner, not both") }
        }

        func run(_ context: CommandContext) async throws {
            try ReservedEntryNames.check(name: name, owner: owner, for: .store)
            if guest { try context.requireFileStore(options) }
            let storage = try await context.storage(.entries, options)
            let owner = try guest ? Self.guestOwner(in: options.directory) : self.owner
            let secret = try SecretInput.read(for: name, allowPrompt: !options.noPrompt)
            let expiry = expiresAt ?? expiresIn.map { Date().addingTimeInterval(TimeInterval($0)) } ?? JWT.expiry(of: secret)
            let stored = try await storage.storeEntry(NewEntry(name: name, owner: owner, secret: secret, kind: kind, label: label,
                                                               expiresAt: expiry, transferable: !nonTransferable),
                                                      replace: replace)
            ErrorReport.note("Stored '\(TerminalText.escaped(name))' (\(stored.kind), \(stored.secretByteCount) byte\(stored.secretByteCount == 1 ? "" : "s"), \(stored.expiryStatus(at: Date()))).")
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
