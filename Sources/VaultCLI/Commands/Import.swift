import ArgumentParser
import CredentialVault

extension VaultCommand {
    /// `vault import --from FORMAT SOURCE`: moves entries from another tool into the vault in one transaction.
    struct Import: ContextCommand {
        static let configuration = CommandConfiguration(
            commandName: "import",
            abstract: "Import entries from pass, a .env file, KeePassXC's CSV or Bitwarden's JSON export.",
            discussion: """
                FORMAT is pass (a password-store folder, decrypted with your gpg: the secret is the whole \
                file, as 'pass show' prints it; the name its path in the store), dotenv (each variable an \
                entry), keepassxc-csv (KeePassXC's CSV export: name Group/Title, secret Password, label \
                'Username @ URL') or bitwarden-json (Bitwarden's unencrypted JSON export: logins, name \
                Folder/Name, secret the password, label the username; an encrypted export is refused).

                The import is one transaction: every entry is written, or none. A name that is not valid \
                for vault (not NFC, too long, control characters) stops it before anything is written, \
                listing every such name, unless --skip-invalid skips them. When the source holds a name \
                twice, the last one is imported and the others are reported. Names already in the vault \
                are skipped and reported unless --replace. The source is never changed: once the import \
                is done, shred a plaintext export (shred -u FILE). --dry-run lists the names that would \
                be imported and writes nothing.

                Examples:
                  vault import --from pass ~/.password-store --dry-run
                  vault import --from keepassxc-csv export.csv
                  shred -u export.csv
                """
        )

        @OptionGroup var options: VaultOptions

        @Option(name: .customLong("from"), help: ArgumentHelp("What SOURCE is: \(ImportFormat.allCases.map(\.rawValue).joined(separator: ", ")).",
                                                              valueName: "FORMAT"))
        var format: ImportFormat

        @Argument(help: ArgumentHelp("The password-store folder, or the export file.", valueName: "SOURCE"), completion: .file())
        var source: String

        @Flag(name: .customLong("dry-run"), help: "List the names that would be imported; write nothing.")
        var dryRun = false

        @Flag(help: "Replace entries of the same name already in the vault.")
        var replace = false

        @Flag(name: .customLong("skip-invalid"), help: "Skip names that are not valid for vault instead of stopping.")
        var skipInvalid = false

        @Flag(help: "Report imported, skipped and invalid names as JSON on standard output.")
        var json = false

        func run(_ context: CommandContext) async throws {
            let read = try format.read(source, readSecrets: !(dryRun && format == .pass))
            var plan = ImportPlan(read, checkSecrets: !(dryRun && format == .pass))
            if !plan.invalid.isEmpty, !skipInvalid {
                if json { try printReport(plan, written: false) }
                for item in plan.invalid { ErrorReport.note("  \(TerminalText.escaped(item.name)): \(item.reason)") }
                throw VaultError(.invalidInput,
                                 "\(plan.invalid.count) name\(plan.invalid.count == 1 ? " is" : "s are") not valid for vault (listed above); nothing was imported",
                                 fix: "rename them in the source, or pass --skip-invalid to import the rest")
            }
            let storage = try await context.storage(.entries, options)
            let existing = Set(try await storage.listEntries(owner: "").map(\.name))
            plan.separate(existing: existing, replace: replace)
            if !dryRun, !plan.toImport.isEmpty {
                _ = try await storage.storeEntries(plan.toImport.map {
                    NewEntry(name: $0.name, owner: "", secret: $0.secret, kind: $0.kind, label: $0.label, expiresAt: nil)
                }, replace: replace, writer: .import)
            }
            if json { return try printReport(plan, written: !dryRun) }
            if dryRun {
                for candidate in plan.toImport { try StandardIO.printOutput(TerminalText.escaped(candidate.name) + "\n") }
            }
            for item in plan.skipped { ErrorReport.note("Skipped '\(TerminalText.escaped(item.name))': \(item.reason).") }
            for item in plan.invalid { ErrorReport.note("Skipped invalid '\(TerminalText.escaped(item.name))': \(item.reason).") }
            let count = plan.toImport.count
            ErrorReport.note((dryRun ? "Would import" : "Imported") + " \(count) entr\(count == 1 ? "y" : "ies") from \(format.rawValue)"
                             + (plan.replacing.isEmpty ? "" : " (\(plan.replacing.count) replaced)") + "."
                             + (dryRun || format == .pass ? "" : " The source is unchanged: shred it when you no longer need it (shred -u FILE)."))
        }

        /// `--json`: `imported`, `skipped`, `invalid` (names), with `details` giving each one's reason.
        private func printReport(_ plan: ImportPlan, written: Bool) throws {
            var details: [JSONValue] = plan.toImport.map {
                ["name": .string($0.name), "status": plan.replacing.contains($0.name) ? "replaced" : "imported", "reason": nil]
            }
            details += plan.skipped.map { ["name": .string($0.name), "status": "skipped", "reason": .string($0.reason)] }
            details += plan.invalid.map { ["name": .string($0.name), "status": "invalid", "reason": .string($0.reason)] }
            let report: JSONValue = [
                "format": .string(format.rawValue),
                "dryRun": .bool(dryRun),
                "written": .bool(written),
                "imported": .array(plan.toImport.map { .string($0.name) }),
                "replaced": .array(plan.replacing.map { .string($0) }),
                "skipped": .array(plan.skipped.map { .string($0.name) }),
                "invalid": .array(plan.invalid.map { .string($0.name) }),
                "details": .array(details),
            ]
            try StandardIO.printOutput(bytes: try report.serialized(prettyPrinted: true) + [UInt8(ascii: "\n")])
        }
    }
}

/// Which entries of a source are imported, and why the others are not.
struct ImportPlan {
    /// The valid, last-of-their-name candidates, before the vault's names are known; then those to write.
    private(set) var toImport: [ImportSource.Candidate] = []
    /// Names among `toImport` that replace an entry (with `--replace`).
    private(set) var replacing: [String] = []
    /// Not imported, with why: already in the vault, a duplicate, not an entry (a note, a card, no password).
    private(set) var skipped: [(name: String, reason: String)] = []
    /// Names (or labels, secrets) that vault does not accept, with why.
    private(set) var invalid: [(name: String, reason: String)] = []

    /// Checks every candidate and drops all but the last of each name.
    init(_ source: ImportSource, checkSecrets: Bool) {
        // Names compared as bytes: an NFC and an NFD spelling are two names (the NFD one is invalid).
        var lastIndex: [[UInt8]: Int] = [:]
        for (index, candidate) in source.candidates.enumerated() { lastIndex[Array(candidate.name.utf8)] = index }
        for (index, candidate) in source.candidates.enumerated() {
            guard lastIndex[Array(candidate.name.utf8)] == index else {
                skipped.append((candidate.name, "the source has this name again further on; the last one is imported"))
                continue
            }
            do {
                if let reason = candidate.invalidReason { throw VaultError(.invalidInput, reason) }
                try EntryValidation.checkName(candidate.name)
                try ReservedEntryNames.check(name: candidate.name, for: .store)
                try EntryValidation.checkLabel(candidate.label)
                if checkSecrets { try EntryValidation.checkSecret(byteCount: candidate.secret.count) }
                toImport.append(candidate)
            } catch let error as VaultError {
                invalid.append((candidate.name, error.message))
            } catch {
                invalid.append((candidate.name, "\(error)"))
            }
        }
        skipped += source.unsupported
    }

    /// Leaves out (or, with `replace`, marks as replaced) the names already in the vault.
    mutating func separate(existing: Set<String>, replace: Bool) {
        let existing = Set(existing.map { Array($0.utf8) })
        let present = toImport.filter { existing.contains(Array($0.name.utf8)) }
        guard !present.isEmpty else { return }
        if replace {
            replacing = present.map(\.name)
        } else {
            toImport.removeAll { existing.contains(Array($0.name.utf8)) }
            skipped += present.map { ($0.name, "already in the vault (--replace replaces it)") }
        }
    }
}
