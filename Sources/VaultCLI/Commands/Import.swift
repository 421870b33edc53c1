import ArgumentParser
import CredentialVault

extension VaultCommand {
    /// `vault import --from FORMAT SOURCE`: moves entries from another tool into the vault in one transaction.
    struct Import: ContextCommand {
        static let configuration = CommandConfiguration(
            commandName: "import",
            // The root help's snapshot (SecretHygieneTests) holds this line.
            abstract: "Import entries from pass, a .env file, KeePassXC's CSV, Bitwarden's JSON export or the Secret Service.",
            discussion: """
                FORMAT is pass (a password-store folder, decrypted with your gpg: the secret is the whole \
                file, as 'pass show' prints it; the name its path in the store), dotenv (each variable an \
                entry), keepassxc-csv (KeePassXC's CSV export: name Group/Title, secret Password, label \
                'Username @ URL') or bitwarden-json (Bitwarden's unencrypted JSON export: logins, name \
                Folder/Name, secret the password, label the username; an encrypted export is refused) or \
                secret-service (no SOURCE: every item of the Secret Service provider that owns \
                org.freedesktop.secrets on the session bus now, e.g. gnome-keyring, its locked collections \
                unlocked through the provider's prompt; each item becomes an entry of owner secret-service, \
                as 'vault agent --secret-service' serves them, named by 16 random hex digits, with its label \
                and attributes; an item imported before, same label and attributes, is skipped or with \
                --replace replaced).

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
                  vault import --from secret-service --dry-run
                """
        )

        @OptionGroup var options: VaultOptions

        @Option(name: .customLong("from"), help: ArgumentHelp("What SOURCE is: \(ImportFormat.allCases.map(\.rawValue).joined(separator: ", ")).",
                                                              valueName: "FORMAT"))
        var format: ImportFormat

        @Argument(help: ArgumentHelp("The password-store folder, or the export file (none for secret-service).", valueName: "SOURCE"),
                  completion: .file())
        var source: String?

        @Flag(name: .customLong("dry-run"), help: "List the names that would be imported; write nothing.")
        var dryRun = false

        @Flag(help: "Replace entries of the same name already in the vault.")
        var replace = false

        @Flag(name: .customLong("skip-invalid"), help: "Skip names that are not valid for vault instead of stopping.")
        var skipInvalid = false

        @Flag(help: "Report imported, skipped and invalid names as JSON on standard output.")
        var json = false

        /// How long reading the Secret Service provider may take, its unlock prompts included.
        static let secretServiceTimeout = Duration.seconds(300)

        /// `secret-service` is read over D-Bus, which only `vault-secret-service` links.
        var needsSecretService: Bool { format == .secretService }

        func validate() throws {
            if format.readsFiles, source == nil { throw ValidationError("--from \(format.rawValue) needs SOURCE: the folder or file to read") }
            if !format.readsFiles, source != nil {
                throw ValidationError("--from secret-service takes no SOURCE: it reads the provider on the session bus")
            }
        }

        func run(_ context: CommandContext) async throws {
            var plan: ImportPlan
            if format == .secretService {
                // The provider first: without one the command fails before asking for the vault's key.
                let items = try context.requireSecretService().exportItems(
                    SecretServiceExportSetup(environment: context.environment, timeout: Self.secretServiceTimeout))
                let existing = try await context.storage(.entries, options).listEntries(owner: SecretServiceEntries.owner)
                plan = ImportPlan(try SecretServiceImportReader.read(items, existing: existing), checkSecrets: true)
                plan.collections = Dictionary(items.map { ($0.collection, 1) }, uniquingKeysWith: +)
            } else {
                let read = try format.read(source ?? "", readSecrets: !(dryRun && format == .pass))
                plan = ImportPlan(read, checkSecrets: !(dryRun && format == .pass))
            }
            if !plan.invalid.isEmpty, !skipInvalid {
                if json { try printReport(plan, written: false) }
                for item in plan.invalid { ErrorReport.note("  \(TerminalText.escaped(plan.shown(item.name))): \(item.reason)") }
                throw VaultError(.invalidInput,
                                 "\(plan.invalid.count) name\(plan.invalid.count == 1 ? " is" : "s are") not valid for vault (listed above); nothing was imported",
                                 fix: "rename them in the source, or pass --skip-invalid to import the rest")
            }
            // The vault was opened above for secret-service; storage(_:_:) keeps what it opened.
            let storage = try await context.storage(.entries, options)
            let owner = format == .secretService ? SecretServiceEntries.owner : ""
            let existing = Set(try await storage.listEntries(owner: owner).map(\.name))
            plan.separate(existing: existing, replace: replace)
            if !dryRun, !plan.toImport.isEmpty {
                _ = try await storage.storeEntries(plan.toImport.map {
                    NewEntry(name: $0.name, owner: $0.owner, secret: $0.secret, kind: $0.kind, label: $0.label, expiresAt: nil,
                             attributes: $0.attributes)
                }, replace: replace, writer: .import)
            }
            if json { return try printReport(plan, written: !dryRun) }
            if dryRun {
                for candidate in plan.toImport {
                    try StandardIO.printOutput(TerminalText.escaped(candidate.shown ?? candidate.name) + Self.attributeText(candidate.attributes) + "\n")
                }
            }
            for item in plan.skipped { ErrorReport.note("Skipped '\(TerminalText.escaped(plan.shown(item.name)))': \(item.reason).") }
            for item in plan.invalid { ErrorReport.note("Skipped invalid '\(TerminalText.escaped(plan.shown(item.name)))': \(item.reason).") }
            let count = plan.toImport.count
            ErrorReport.note((dryRun ? "Would import" : "Imported") + " \(count) entr\(count == 1 ? "y" : "ies") from \(format.rawValue)"
                             + (plan.replacing.isEmpty ? "" : " (\(plan.replacing.count) replaced)")
                             + (format == .secretService ? Self.collectionText(plan) : "") + "."
                             + (dryRun || !format.readsFiles || format == .pass ? ""
                                : " The source is unchanged: shred it when you no longer need it (shred -u FILE)."))
        }

        /// "  {name=value, …}" of a Secret Service item's visible attributes, escaped, sorted; "" without any.
        private static func attributeText(_ attributes: [String: String]) -> String {
            let visible = attributes.filter { $0.key != SecretServiceEntries.contentTypeAttribute && $0.key != SecretServiceEntries.labelAttribute }
            guard !visible.isEmpty else { return "" }
            return "  {" + visible.sorted { $0.key < $1.key }.map { TerminalText.escaped($0.key) + "=" + TerminalText.escaped($0.value) }
                .joined(separator: ", ") + "}"
        }

        /// "; the provider had N items in K collections (Login 3, …), M skipped, I invalid".
        private static func collectionText(_ plan: ImportPlan) -> String {
            let total = plan.collections.values.reduce(0, +)
            let list = plan.collections.sorted { $0.key < $1.key }
                .map { "\(TerminalText.escaped($0.key.isEmpty ? "-" : $0.key)) \($0.value)" }.joined(separator: ", ")
            return "; the provider gave \(total) item\(total == 1 ? "" : "s")"
                + (plan.collections.isEmpty ? "" : " in \(plan.collections.count) collection\(plan.collections.count == 1 ? "" : "s") (\(list))")
                + ", \(plan.skipped.count) skipped, \(plan.invalid.count) invalid"
        }

        /// `--json`: `imported`, `skipped`, `invalid` (names), with `details` giving each one's reason.
        private func printReport(_ plan: ImportPlan, written: Bool) throws {
            var details: [JSONValue] = plan.toImport.map { candidate in
                var detail: JSONValue = ["name": .string(candidate.name),
                                         "status": plan.replacing.contains(candidate.name) ? "replaced" : "imported", "reason": nil]
                if format == .secretService, case .object(var members) = detail {
                    members["owner"] = .string(candidate.owner)
                    members["label"] = candidate.label.map(JSONValue.string) ?? .null
                    members["attributes"] = .object(candidate.attributes.mapValues(JSONValue.string))
                    detail = .object(members)
                }
                return detail
            }
            details += plan.skipped.map { ["name": .string($0.name), "status": "skipped", "reason": .string($0.reason)] }
            details += plan.invalid.map { ["name": .string($0.name), "status": "invalid", "reason": .string($0.reason)] }
            var report: JSONValue = [
                "format": .string(format.rawValue),
                "dryRun": .bool(dryRun),
                "written": .bool(written),
                "imported": .array(plan.toImport.map { .string($0.name) }),
                "replaced": .array(plan.replacing.map { .string($0) }),
                "skipped": .array(plan.skipped.map { .string($0.name) }),
                "invalid": .array(plan.invalid.map { .string($0.name) }),
                "details": .array(details),
            ]
            if format == .secretService, case .object(var members) = report {
                members["owner"] = .string(SecretServiceEntries.owner)
                members["collections"] = .object(plan.collections.mapValues { .integer(Int128($0)) })
                report = .object(members)
            }
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
    /// How messages show each name that is not shown as itself (a Secret Service item's "NAME (Collection/Label)").
    private var shownNames: [String: String] = [:]
    /// Items the Secret Service provider gave, per collection label (empty for the file formats).
    var collections: [String: Int] = [:]

    /// How messages show `name`.
    func shown(_ name: String) -> String { shownNames[name] ?? name }

    /// Checks every candidate and drops all but the last of each name.
    init(_ source: ImportSource, checkSecrets: Bool) {
        // Names compared as bytes: an NFC and an NFD spelling are two names (the NFD one is invalid).
        var lastIndex: [[UInt8]: Int] = [:]
        for (index, candidate) in source.candidates.enumerated() { lastIndex[Array(candidate.name.utf8)] = index }
        for candidate in source.candidates { if let shown = candidate.shown { shownNames[candidate.name] = shown } }
        for (index, candidate) in source.candidates.enumerated() {
            guard lastIndex[Array(candidate.name.utf8)] == index else {
                skipped.append((candidate.name, "the source has this name again further on; the last one is imported"))
                continue
            }
            do {
                if let reason = candidate.invalidReason { throw VaultError(.invalidInput, reason) }
                try EntryValidation.checkName(candidate.name)
                try ReservedEntryNames.check(name: candidate.name, owner: candidate.owner, for: .store)
                try EntryValidation.checkLabel(candidate.label)
                try EntryValidation.checkAttributes(candidate.attributes)
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
            skipped += present.map {
                ($0.name, $0.owner == SecretServiceEntries.owner
                    ? "imported before: an entry of owner \($0.owner) has its label and attributes (--replace replaces it)"
                    : "already in the vault (--replace replaces it)")
            }
        }
    }
}
