import ArgumentParser
import CredentialVault

/// The `vault` executable: an encrypted token store and session manager for Linux.
///
/// The entry pipeline (`VaultEntryPoint`) parses the command line against this root and runs the
/// command it names with the process's `CommandContext`, mapping every error to one exit status
/// (`VaultExitStatus`). Add a command by listing it in a group below and making it a `ContextCommand`.
struct VaultCommand: ContextCommand {
    /// The root's configuration, with the discussion that only the root's help shows.
    static let configuration = CommandConfiguration(
        commandName: "vault",
        abstract: "Keep sign-in tokens and secrets safe on Linux, and bring the signed-in user back at start-up.",
        discussion: HelpText.rootDiscussion,
        // No `version:`: argument-parser would give every subcommand a `--version` flag of its
        // own, and `restore NAME --version N` takes a number. `CommandParser` answers `vault --version`.
        groupedSubcommands: commandGroups
    )

    /// Every command, in the groups the help lists them in.
    static let commandGroups = [
        CommandGroup(name: "Vault", subcommands: [
            Agent.self, Unlock.self, Lock.self,
            Keygen.self, Init.self, Verify.self, Passwd.self, Rotate.self, UpgradeFormat.self, Wipe.self, MigrateStore.self, SelfCheck.self,
        ]),
        CommandGroup(name: "Credentials", subcommands: [Add.self, Get.self, Inspect.self, List.self, Remove.self, History.self, Restore.self, Audit.self, Exec.self, Inject.self, Import.self, TOTP.self, Generate.self]),
        CommandGroup(name: "Session", subcommands: [Status.self, SignIn.self, SignOut.self, Guest.self, Token.self, Refresh.self, Client.self, Demo.self]),
    ]

    /// For scripts/manpages: print the ENVIRONMENT, EXIT STATUS and EXAMPLES sections of the
    /// man page as mdoc, from the same tables as this help (`HelpText`, `VaultExitStatus`).
    @Flag(name: .customLong("mdoc-sections"), help: .hidden)
    var mdocSections = false

    func run(_ context: CommandContext) async throws {
        if mdocSections {
            try StandardIO.printOutput(HelpText.mdocSections)
            return
        }
        throw CleanExit.helpRequest(self)
    }
}
