#if canImport(Glibc)
import Glibc
#else
#error("vault runs on Linux (Glibc)")
#endif
import ArgumentParser
import CredentialVault
import VaultCrypto

/// The entry point the four executables call: `vault` (Sources/VaultMain), `vault-oauth`
/// (Sources/VaultOAuthMain, which links the OAuth client), `vault-postgres`
/// (Sources/VaultPostgresMain, which links the OAuth client and the PostgreSQL store) and
/// `vault-secret-service` (Sources/VaultSecretServiceMain, which links sd-bus).
///
/// One pipeline, in a fixed order:
/// 1. the hand-over marker is taken out of the environment (a helper knows it was handed a command),
///    and the variables `vault` reads are read, once (`CommandEnvironment`, carried by the context);
/// 2. **personalities**: argv[0] `git-credential-vault`, `docker-credential-vault` or
///    `vault-clipboard-clearer` runs that command of its own;
/// 3. **store routing**: a command line or `VAULT_STORE` naming a PostgreSQL store goes to `vault-postgres`;
/// 4. **parse** (`CommandParser`);
/// 5. **hand-over**: a command that `needsSecretService` goes to `vault-secret-service`; one whose
///    `oauthHandOver` says so goes to `vault-oauth`. Steps 3 and 5
///    are the only places the process is replaced (`HelperExecutable.replaceProcess`), before any
///    key, prompt, standard input or passphrase variable is read;
/// 6. the process is hardened and the passphrases taken out of the environment;
/// 7. the command **runs** with one `CommandContext`;
/// 8. an error is **reported** as `vault: …` with its exit status.
///
/// The pipeline keeps no state of its own: what the executable links is passed in, and what the
/// run resolves lives in the context. VaultCLI's process-wide mutable values are the ones a signal
/// handler needs (a handler can reach nothing else): the terminal settings it puts back
/// (`Support/Terminal.swift`), the state of `exec`'s signal forwarding to its child
/// (`Support/ChildProcess.swift`) and the agent's wake-up pipe (`Agent/AgentServer.swift`).
package enum VaultEntryPoint {
    /// Runs the `vault` command line and exits.
    /// - Parameters:
    ///   - postgres: what the PostgreSQL store adds, when the executable links it.
    ///   - oauth: what the OAuth client adds, when the executable links it.
    ///   - secretService: what the Secret Service provider adds, when the executable links it.
    package static func run(postgres: (any PostgresCommandSupport)?, oauth: (any OAuthCommandSupport)?,
                            secretService: (any SecretServiceCommandSupport)? = nil) async -> Never {
        let arrivedAs = HelperExecutable.takeHandOverMarker()
        let arguments = CommandLine.arguments
        let environment = CommandEnvironment.process()

        if let personality = Personality(invokedAs: arguments.first ?? "") {
            exit(runPersonality(personality, arguments: Array(arguments.dropFirst()), oauth: oauth, postgres: postgres,
                                environment: environment))
        }

        if postgres == nil, StoreRouting.needsPostgres(arguments: arguments, environment: environment) {
            HelperExecutable.postgres.replaceProcess(arrivedAs: arrivedAs)
        }

        let parsed: ParsableCommand
        do {
            parsed = try CommandParser.parse(arguments)
        } catch {
            VaultCommand.exit(withError: error)
        }
        guard let command = parsed as? any ContextCommand else {
            // Not one of vault's commands: the parser's own (`vault help get`), which prints a
            // help page when it runs, and needs nothing of the context.
            var parserCommand = parsed
            do {
                try parserCommand.run()
            } catch {
                VaultCommand.exit(withError: error)
            }
            exit(VaultExitStatus.success)
        }

        if secretService == nil, command.needsSecretService {
            HelperExecutable.secretService.replaceProcess(arrivedAs: arrivedAs)
        }
        if oauth == nil {
            switch command.oauthHandOver {
            case .never: break
            case .always: HelperExecutable.oauth.replaceProcess(arrivedAs: arrivedAs)
            case .whenInstalled: HelperExecutable.oauth.replaceProcessIfInstalled(arrivedAs: arrivedAs)
            }
        }

        exit(await runCommand(command, oauth: oauth, postgres: postgres, secretService: secretService, environment: environment))
    }

    /// Runs `command` with a context of its own and returns the exit status. The context (and with
    /// it the key, the store and the session) is released, its key zeroised, before this returns,
    /// so nothing of it is alive when the process exits.
    private static func runCommand(_ command: any ContextCommand, oauth: (any OAuthCommandSupport)?,
                                   postgres: (any PostgresCommandSupport)?, secretService: (any SecretServiceCommandSupport)?,
                                   environment: CommandEnvironment) async -> Int32 {
        let context = prepareProcess(oauth: oauth, postgres: postgres, secretService: secretService, environment: environment)
        // The process's first libcrypto call, once the command is known (so `--version` and
        // help never load OpenSSL): openssl.cnf is honoured, its error texts are not loaded.
        CryptoLibrary.initializeForCommandLine()
        do {
            try await command.run(context)
            await context.close()
            return VaultExitStatus.success
        } catch {
            await context.close()
            guard let reported = ErrorReport.report(error, oauth: oauth) else { VaultCommand.exit(withError: error) }
            return reported
        }
    }

    /// Runs a personality (git's or docker's helper, the clipboard clearer) with a context of its
    /// own, released before this returns (as `runCommand`).
    private static func runPersonality(_ personality: Personality, arguments: [String], oauth: (any OAuthCommandSupport)?,
                                       postgres: (any PostgresCommandSupport)?, environment: CommandEnvironment) -> Int32 {
        let context = prepareProcess(oauth: oauth, postgres: postgres, environment: environment)
        CryptoLibrary.initializeForCommandLine()
        return personality.run(arguments, context: context)
    }

    /// Before a command runs: no core dumps and no ptrace by other processes (secrets will be in
    /// memory), the passphrases taken out of the environment (`PassphraseEnvironment`), and
    /// `EPIPE` as an error instead of a silent death by `SIGPIPE`, so that `vault get NAME | head -c0`
    /// reports the failed write.
    /// - Returns: the context the command runs with.
    private static func prepareProcess(oauth: (any OAuthCommandSupport)?, postgres: (any PostgresCommandSupport)?,
                                       secretService: (any SecretServiceCommandSupport)? = nil,
                                       environment: CommandEnvironment) -> CommandContext {
        ProcessHardening.disableCoreDumps()
        let passphrases = PassphraseEnvironment.capture()
        _ = signal(SIGPIPE, SIG_IGN)
        return CommandContext(oauth: oauth, postgres: postgres, secretService: secretService, passphrases: passphrases,
                              environment: environment)
    }
}
