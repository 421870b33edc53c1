#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ArgumentParser
import CredentialVault
import Foundation

extension VaultCommand {
    /// `vault wipe`: crypto-shreds every credential.
    struct Wipe: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Destroy every credential: overwrite the vault file and its wrapped key, then remove it.",
            discussion: """
                Needs no key, so a vault whose passphrase is lost can still be destroyed. Without --yes it asks \
                on the terminal (type 'wipe'); without a terminal it refuses.
                """
        )

        /// The profile files `--all` removes.
        static let profileFiles = ["profile.json", "profile.lock"]

        @OptionGroup var options: VaultOptions

        @Flag(help: "Do not ask for confirmation.")
        var yes = false

        @Flag(help: "Also remove the profile (signed-in user, guest id, settings).")
        var all = false

        func run() throws {
            let directory = options.directory
            if !yes { try Self.confirm(directory: directory, terminal: options.terminal()) }
            let wiped = try SecretStore.wipe(in: directory, lockTimeout: options.lockTimeout)
            let removed = all ? try Self.profileFiles.filter { try Self.removeIfPresent((directory as NSString).appendingPathComponent($0)) } : []
            guard wiped || !removed.isEmpty else { throw VaultError.vaultNotFound(path: directory) }
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

        /// Removes a file; a missing one is fine. The corresponding C function is `unlink`.
        /// - Returns: whether a file was removed.
        static func removeIfPresent(_ path: String) throws -> Bool {
            guard unlink(path) != 0 else { return true }
            let code = errno
            if code == ENOENT || code == ENOTDIR { return false }
            throw VaultError.io("removing the file", path: path, errno: code)
        }
    }
}
