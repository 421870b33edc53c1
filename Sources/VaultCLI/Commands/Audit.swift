import ArgumentParser
import CredentialVault
import FoundationEssentials

extension VaultCommand {
    /// `vault audit`: the agent's audit trail of this vault; `--verify` checks its chain.
    struct Audit: ContextCommand {
        static let configuration = CommandConfiguration(
            commandName: "audit",
            abstract: "Show the agent's audit log of this vault (who asked for which entry, allowed or refused), or verify its chain.",
            discussion: """
                The agent writes one record per entry request (get, list, add, rm) to \
                $XDG_STATE_HOME/vault/audit/<vault id>.log (else ~/.local/state/vault/audit): time, \
                operation, entry name (never a value), the caller's personality, executable chain and \
                units, and whether it was allowed or which rule refused it. Each record is chained to \
                the one before with an HMAC under a key only the vault's key reaches. Showing the log \
                needs no key; --verify opens the vault with its key and checks every MAC, the order, \
                and the log's authenticated end: exit 65 naming the first bad record, 0 when intact.
                """
        )

        @OptionGroup var options: VaultOptions

        @Option(help: ArgumentHelp("Only records of the last DURATION (90s, 15m, 1h30m, 7d).", valueName: "DURATION"),
                transform: HumanDuration.seconds(in:))
        var since: Int64?

        @Flag(help: "Print a JSON array of the records (see docs/CLI.md).")
        var json = false

        @Flag(help: "Check the chain of MACs with the vault's key (exit 65 naming the first bad record).")
        var verify = false

        func validate() throws {
            if verify, since != nil { throw ValidationError("--verify checks the whole log; leave out --since") }
        }

        func run(_ context: CommandContext) async throws {
            try context.requireFileStore(options)
            guard let folder = AuditLog.standardDirectory(environment: Self.stateEnvironment(context.environment)) else {
                throw VaultError(.notFound, "no folder for the audit log: neither XDG_STATE_HOME nor HOME is set")
            }
            if verify {
                let store = try await context.storage(.vaultFile(), options)
                let result = try AuditLogReader.verify(directory: folder, vaultID: store.vaultID, key: try store.auditKey())
                try Self.report(result, json: json)
                return
            }
            let vaultID = try SecretStore.vaultIDWithoutKey(in: options.directory)
            let cutoff = since.map { Date().addingTimeInterval(-TimeInterval($0)) }
            let records = try AuditLogReader.read(directory: folder, vaultID: vaultID).map(\.record).filter { record in
                guard let cutoff else { return true }
                guard case let .object(fields) = record, case let .string(time)? = fields["time"],
                      let date = ISO8601Timestamp.date(from: time) else { return false }
                return date >= cutoff
            }
            if json {
                try StandardIO.printOutput(TextLayout.json(.array(records)))
            } else if records.isEmpty {
                ErrorReport.note("No audit records\(since == nil ? "" : " in that time").")
            } else {
                try StandardIO.printOutput(Self.table(records))
            }
        }

        static func stateEnvironment(_ environment: CommandEnvironment) -> [String: String] {
            var values: [String: String] = [:]
            values["XDG_STATE_HOME"] = environment[.xdgStateHome]
            values["HOME"] = environment[.home]
            return values
        }

        static func report(_ result: AuditLogReader.Verification, json: Bool) throws {
            if json {
                try StandardIO.printOutput(TextLayout.json(.object([
                    "intact": .bool(true),
                    "recordsChecked": .integer(Int128(result.recordsChecked)),
                    "firstRecord": .integer(Int128(result.firstSequence)),
                    "startsAfterRotation": .bool(result.startsAfterRotation),
                ])))
                return
            }
            var text = "The audit log is intact: \(result.recordsChecked) record\(result.recordsChecked == 1 ? "" : "s") checked"
            if result.startsAfterRotation {
                text += ", from record \(result.firstSequence) in \(result.firstFile ?? "the oldest file kept") (older records were rotated out and are not checked)"
            }
            try StandardIO.printOutput(TerminalText.escaped(text) + ".\n")
        }

        /// TIME OP ENTRY DECISION CALLER RULE (every cell escaped by the table).
        static func table(_ records: [JSONValue]) -> String {
            let rows = records.map { record -> [String] in
                guard case let .object(fields) = record else { return [] }
                func text(_ key: String) -> String {
                    if case let .string(value)? = fields[key] { return value }
                    return ""
                }
                let entry = text("entry").isEmpty ? (text("operation") == "list" ? "(list)" : "") : text("entry")
                let owner = text("owner").isEmpty ? "" : " [\(text("owner"))]"
                var caller = "unknown"
                if case let .object(who)? = fields["caller"] {
                    let personality: String = if case let .string(value)? = who["personality"] { value } else { "" }
                    let pid: String = if case let .integer(value)? = who["pid"] { "\(value)" } else { "?" }
                    let chain: String = if case let .array(items)? = who["executables"] {
                        items.compactMap { if case let .string(value) = $0 { value } else { nil } }.joined(separator: " < ")
                    } else { "" }
                    let unit: String = if case let .string(value)? = who["unit"] { "; unit \(value)" } else { "" }
                    caller = "\(personality) (pid \(pid); \(chain)\(unit))"
                }
                return [text("time"), text("operation"), entry + owner, text("decision"), caller, text("rule")]
            }
            return TextLayout.table(header: ["TIME", "OP", "ENTRY", "DECISION", "CALLER", "RULE"], rows: rows)
        }
    }
}
