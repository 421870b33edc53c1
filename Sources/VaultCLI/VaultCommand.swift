import ArgumentParser
import CredentialVault

/// The `vault` executable: an encrypted token store and session manager for Linux.
@main
struct VaultCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "vault",
        abstract: "Keep sign-in tokens and secrets safe on Linux, and bring the signed-in user back at start-up.",
        version: VaultVersion.current,
        subcommands: [SelfCheck.self]
    )
}
