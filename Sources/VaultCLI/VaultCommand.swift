#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ArgumentParser
import CredentialVault
import VaultCrypto

/// The `vault` executable: an encrypted token store and session manager for Linux.
///
/// Every command runs through `main()`, which hardens the process first and maps every
/// error to one exit status (`VaultExitStatus`). Add a command by listing it in a group below;
/// it may be a `ParsableCommand` or an `AsyncParsableCommand`.
struct VaultCommand: AsyncParsableCommand {
    /// The root's configuration; during a fast parse (`FastParse`) the one without the parser's
    /// completion-script probe.
    static var configuration: CommandConfiguration {
        FastParse.isActive ? fastConfiguration : standardConfiguration
    }

    /// `standardConfiguration` with a `_superCommandName`: the argument parser then skips its
    /// completion-script probe. Only used for a parse whose result is kept when it succeeds.
    private static let fastConfiguration: CommandConfiguration = {
        var configuration = standardConfiguration
        configuration._superCommandName = "vault"
        return configuration
    }()

    private static let standardConfiguration = CommandConfiguration(
        commandName: "vault",
        abstract: "Keep sign-in tokens and secrets safe on Linux, and bring the signed-in user back at start-up.",
        // The root discussion (wrapped tables of the environment and exit statuses) is only
        // ever shown by root-level help, so a subcommand's run does not build it.
        discussion: HelpText.rootHelpMayBeShown(arguments: CommandLine.arguments) ? HelpText.rootDiscussion : "",
        version: VaultVersion.current,
        groupedSubcommands: [
            CommandGroup(name: "Vault", subcommands: [
                Keygen.self, Init.self, Verify.self, Passwd.self, Rotate.self, Wipe.self, MigrateStore.self, SelfCheck.self,
            ]),
            CommandGroup(name: "Credentials", subcommands: [Add.self, Get.self, Inspect.self, List.self, Remove.self, Exec.self]),
            CommandGroup(name: "Session", subcommands: [Status.self, SignIn.self, SignOut.self, Guest.self, Token.self, Refresh.self, Client.self, Demo.self]),
        ]
    )

    /// For scripts/manpages: print the ENVIRONMENT, EXIT STATUS and EXAMPLES sections of the
    /// man page as mdoc, from the same tables as this help (`HelpText`, `VaultExitStatus`).
    @Flag(name: .customLong("mdoc-sections"), help: .hidden)
    var mdocSections = false

    mutating func run() async throws {
        if mdocSections {
            try StandardIO.printOutput(HelpText.mdocSections)
            return
        }
        throw CleanExit.helpRequest(self)
    }

    /// Hardens the process, parses, runs, and turns any error into a message and an exit status.
    static func main() async {
        await main(postgres: nil, oauth: nil)
    }

    /// `main()` of an executable that links the PostgreSQL store (`vault-postgres`) or not (`vault`,
    /// `vault-oauth`), and the OAuth client (`vault-oauth`, `vault-postgres`) or not (`vault`).
    /// Without the PostgreSQL store, a command line or environment that names a PostgreSQL store is
    /// handed, unchanged, to `vault-postgres` (`PostgresHelper`) before anything else happens; without
    /// the OAuth client, a command that will call a server is handed to `vault-oauth` when it starts
    /// (`OAuthHelper.ensureLinked()`).
    static func main(postgres: (any PostgresCommandSupport)?, oauth: (any OAuthCommandSupport)?) async {
        HelperExecutable.takeHandOverMarker()
        OAuthHelper.support.withLock { $0 = oauth }
        if let postgres {
            PostgresHelper.support.withLock { $0 = postgres }
        } else if PostgresHelper.isNeeded(arguments: CommandLine.arguments) {
            PostgresHelper.executable.execute()
        }
        prepareProcess()
        if let helper = CredentialHelperDispatch.helper(invokedAs: CommandLine.arguments.first ?? "") {
            CryptoLibrary.initializeForCommandLine()
            terminate(helper(Array(CommandLine.arguments.dropFirst())))
        }
        do {
            var command = try FastParse.parse()
            // The process's first libcrypto call, once the command is known (so `--version` and
            // help never load OpenSSL): openssl.cnf is honoured, its error texts are not loaded.
            CryptoLibrary.initializeForCommandLine()
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            guard let status = ErrorReport.report(error) else { exit(withError: error) }
            terminate(status)
        }
    }

    /// Before anything else: no core dumps and no ptrace by other processes (secrets will be in
    /// memory), passphrases taken out of the environment (`PassphraseEnvironment`), and `EPIPE`
    /// as an error instead of a silent death by `SIGPIPE`, so that `vault get NAME | head -c0`
    /// reports the failed write.
    private static func prepareProcess() {
        ProcessHardening.disableCoreDumps()
        PassphraseEnvironment.capture()
        _ = signal(SIGPIPE, SIG_IGN)
    }
}

/// Ends the process with `status`. The corresponding C function is `exit`.
private func terminate(_ status: Int32) -> Never {
    exit(status)
}
