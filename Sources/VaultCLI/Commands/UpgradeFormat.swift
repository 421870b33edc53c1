import ArgumentParser
import CredentialVault

extension VaultCommand {
    /// `vault upgrade-format`: rewrites the vault file in the newest format (v3).
    struct UpgradeFormat: ContextCommand {
        static let configuration = CommandConfiguration(
            commandName: "upgrade-format",
            abstract: "Rewrite the vault file in format 3, which hides where each secret ends; older vault releases cannot read it.",
            discussion: """
                New vaults are format 3. A write keeps a format 2 file at format 2, so that an older vault \
                release (on another machine, or after a downgrade) still reads it; this command is the \
                explicit step that moves it on. Format 3 seals the values region anew on every write: the \
                file no longer shows where the ciphertext ends (for a one-entry vault, the secret's exact \
                length), and two copies of the vault no longer share the bytes of an unchanged secret \
                (docs/FORMAT.md). Keys, entries and secrets are kept. Nothing is written when the file is \
                already format 3. A format 1 file becomes format 2 at its next write, or format 3 here. \
                With --store postgres://…, it moves a PostgreSQL store an earlier release wrote (layout 1 \
                or 2) to layout 3 (per-bucket state, docs/FORMAT.md) in one transaction, after checking \
                every row; releases before it cannot read the store afterwards.
                """
        )

        @OptionGroup var options: VaultOptions

        @Flag(help: "Print a JSON object: previousVersion, version, changed.")
        var json = false

        func run(_ context: CommandContext) async throws {
            if case .postgres = try context.storeSelection(options) {
                try await upgradePostgres(context)
                return
            }
            let store = try await context.storage(.vaultFile(), options)
            let upgrade = try store.upgradeFormat()
            if json {
                try printJSON(previousVersion: upgrade.previousVersion, version: upgrade.version, changed: upgrade.changed)
            } else if upgrade.changed {
                ErrorReport.note("Rewrote the vault from format \(upgrade.previousVersion) to format \(upgrade.version).")
            } else {
                ErrorReport.note("The vault is already format \(upgrade.version); nothing was written.")
            }
        }

        /// A PostgreSQL store (`vault-postgres`): moves its layout to version 3 (buckets) in one transaction.
        private func upgradePostgres(_ context: CommandContext) async throws {
            let store = try await context.storage(.fleetSessions, options)
            guard let upgrading = store as? any StoreLayoutUpgrading else {
                throw VaultError(.unsupportedOperation, "this build cannot move the PostgreSQL store's layout")
            }
            let upgrade = try await upgrading.upgradeLayout()
            if json {
                try printJSON(previousVersion: upgrade.previousVersion, version: upgrade.version, changed: upgrade.changed)
            } else if upgrade.changed {
                ErrorReport.note("Rewrote the PostgreSQL store's layout from version \(upgrade.previousVersion) to version \(upgrade.version) "
                                 + "(per-bucket state); vault releases before it cannot read the store.")
            } else {
                ErrorReport.note("The PostgreSQL store's layout is already version \(upgrade.version); nothing was written.")
            }
        }

        /// The `--json` answer of both store kinds: previousVersion, version, changed.
        private func printJSON(previousVersion: Int, version: Int, changed: Bool) throws {
            try StandardIO.printOutput(TextLayout.json(.object([
                "previousVersion": .integer(Int128(previousVersion)),
                "version": .integer(Int128(version)),
                "changed": .bool(changed),
            ])))
        }
    }
}
