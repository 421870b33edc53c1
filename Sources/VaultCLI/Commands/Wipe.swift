import ArgumentParser
import CredentialVault
import Foundation

extension VaultCommand {
    /// `vault wipe`: crypto-shreds every credential.
    struct Wipe: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "wipe",
            abstract: "Destroy every credential: overwrite the vault file and its wrapped key, then remove it.",
            discussion: """
                Needs no key, so a vault whose passphrase is lost can still be destroyed. Without --yes it asks \
                on the terminal (type 'wipe'); without a terminal it refuses.
                """
        )

        @OptionGroup var options: VaultOptions

        @Flag(help: "Do not ask for confirmation.")
        var yes = false

        @Flag(help: "Also remove the profile (signed-in user, guest id, settings).")
        var all = false

        func run() throws {
            let directory = options.directory
            if !yes { try Self.confirm(directory: directory, terminal: options.terminal()) }
            let wiped = try SecretStore.wipe(in: directory, lockTimeout: options.lockTimeout)
            let profiles = ProfileStore(directory: directory, lockTimeout: options.lockTimeout)
            // Removed whatever its contents: a corrupt profile is exactly what --all must clear.
            let hadProfile = all && FileManager.default.fileExists(atPath: profiles.path)
            if hadProfile { try profiles.remove() }
            guard wiped || hadProfile else { throw VaultError.vaultNotFound(path: directory) }
            ErrorReport.note(wiped ? "Wiped the vault in \(directory)." : "No vault in \(directory); removed the profile.")
        }

        /// Asks for the word "wipe" on the terminal.
        /// - Throws: `UsageError` without a terminal or when the answer is anything else.
        static func confirm(directory: String, terminal: Terminal?) throws {
            guard let terminal else {
                throw UsageError("refusing to wipe without --yes: there is no terminal to confirm on", hint: "add --yes")
            }
            let answer = try terminal.readLine(prompt: "This destroys every credential in \(directory). Type 'wipe' to go on: ")
            guard answer == "wipe" else { throw UsageError("not confirmed; nothing was wiped") }
        }
    }
}
