#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ArgumentParser
import CredentialVault
import VaultCrypto

extension VaultCommand {
    /// `vault exec --env VAR=ENTRY … -- COMMAND ARGS…`: runs a command with secrets in its environment.
    struct Exec: ContextCommand {
        static let configuration = CommandConfiguration(
            commandName: "exec",
            abstract: "Run a command with secrets from the vault in its environment (never in its arguments).",
            discussion: """
                Each --env VAR=ENTRY puts the secret of ENTRY into the variable VAR of the command, replacing \
                a variable of that name. The secrets are read, the command started, and vault's copies wiped \
                at once; vault then only waits. SIGINT, SIGTERM, SIGHUP and SIGQUIT are passed on to the command. \
                vault exits with the command's status; when a signal ends the command, vault ends by the same \
                signal. A command that is not found exits 127, one that cannot run 126.
                """
        )

        @OptionGroup var options: VaultOptions

        @Option(name: .customLong("env"), help: ArgumentHelp("Put the secret ENTRY into the variable VAR.", valueName: "VAR=ENTRY"),
                transform: EnvironmentMapping.init(parsing:))
        var mappings: [EnvironmentMapping] = []

        @Argument(parsing: .postTerminator, help: ArgumentHelp("The command and its arguments, after --.", valueName: "COMMAND"))
        var command: [String] = []

        func validate() throws {
            guard !mappings.isEmpty else { throw ValidationError("give at least one --env VAR=ENTRY") }
            guard !command.isEmpty else { throw ValidationError("give the command after --, e.g. vault exec --env TOKEN=api -- curl …") }
            let names = mappings.map(\.variable)
            guard Set(names).count == names.count else { throw ValidationError("each VAR may be given once") }
        }

        func run(_ context: CommandContext) async throws {
            let pid = try await startCommand(context)
            // Nothing of the vault stays in this process while it only waits: the store, its
            // keys and the key are released (zeroised) now.
            await context.close()
            let outcome = try ChildProcess.wait(for: pid)
            switch outcome {
            case .exited(let status):
                endProcess(status)
            case .signalled(let number):
                _ = signal(number, SIG_DFL)
                _ = raise(number)
                endProcess(128 + number)
            }
        }

        /// Opens the vault, reads the secrets and starts the command; the store and the
        /// secrets are gone when this returns.
        private func startCommand(_ context: CommandContext) async throws -> pid_t {
            let storage = try await context.openStorage(options)
            let secrets = try await { () async throws -> [(name: String, value: SecureBytes)] in
                var secrets: [(name: String, value: SecureBytes)] = []
                for mapping in mappings {
                    let secret = try await storage.readEntry(named: mapping.entry, owner: "").secret
                    let hasNUL = secret.withUnsafeBytes { $0.contains(0) }
                    guard !hasNUL else {
                        throw UsageError("the secret of '\(TerminalText.escaped(mapping.entry))' contains a NUL byte, "
                                         + "which an environment variable cannot hold")
                    }
                    secrets.append((mapping.variable, secret))
                }
                return secrets
            }()
            return try ChildProcess.spawn(command, secrets: secrets)
        }
    }
}

/// One `--env VAR=ENTRY`.
struct EnvironmentMapping: Sendable {
    let variable: String
    let entry: String

    /// Parses `VAR=ENTRY`; VAR is a portable variable name (letters, digits, underscore, not starting with a digit).
    init(parsing text: String) throws {
        guard let equals = text.firstIndex(of: "=") else {
            throw ValidationError("'\(TerminalText.escaped(text))' is not VAR=ENTRY")
        }
        let variable = String(text[..<equals]), entry = String(text[text.index(after: equals)...])
        let allowed = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
        guard let first = variable.first, !first.isNumber, variable.allSatisfy(allowed.contains) else {
            throw ValidationError("'\(TerminalText.escaped(variable))' is not a variable name (letters, digits and _, not starting with a digit)")
        }
        guard !entry.isEmpty else { throw ValidationError("--env \(variable)= needs an entry name after '='") }
        self.variable = variable
        self.entry = entry
    }
}

/// Ends vault with `status`. The corresponding C function is `exit`.
private func endProcess(_ status: Int32) -> Never {
    exit(status)
}
