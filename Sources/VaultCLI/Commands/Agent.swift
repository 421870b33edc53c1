#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ArgumentParser
import CredentialVault
import FoundationEssentials
import VaultCrypto

extension VaultCommand {
    /// `vault agent [--sh | --status [--json]] [--idle-timeout D] [--max-lifetime D] [--secret-service [--replace] [--vault DIR]]`.
    struct Agent: ContextCommand {
        static let configuration = CommandConfiguration(
            commandName: "agent",
            abstract: "Run the agent that holds unlocked vaults, so commands need no passphrase (see 'vault unlock').",
            discussion: """
                The agent listens on $VAULT_AGENT_SOCK, else $XDG_RUNTIME_DIR/vault/agent.sock (its folder \
                0700); with neither set it does not start. It answers get, list, add and rm for the vaults \
                'vault unlock' gave it: the key never leaves the agent, and only processes of your own user \
                are served. It forgets a vault's key after --idle-timeout without use, after --max-lifetime \
                at the latest, on 'vault lock', and when it ends (SIGTERM, SIGINT, SIGHUP).

                Without options the agent runs in the foreground (what a systemd unit starts; socket \
                activation through LISTEN_FDS works). --sh starts it in the background and prints the shell \
                lines that export VAULT_AGENT_SOCK, as ssh-agent does: eval "$(vault agent --sh)". \
                --status asks the running agent which vaults it holds and until when (exit 69 when none answers).

                --secret-service also makes the agent the Secret Service on the session bus \
                ($DBUS_SESSION_BUS_ADDRESS): it claims org.freedesktop.secrets, serves the vault in --vault DIR \
                (default $VAULT_DIR) as the collection behind the 'default' and 'login' aliases, plus an \
                in-memory 'session' collection, so libsecret, secret-tool, Python's keyring and git's \
                credential-libsecret keep their secrets in vault, under the same rules file as the socket's \
                callers. It refuses to start when another program owns the name, unless --replace. It runs in \
                vault-secret-service, installed beside vault (exit 66 without it).
                """
        )

        @Flag(name: .customLong("sh"), help: "Start the agent in the background and print the shell lines that point commands at it.")
        var shell = false

        @Flag(help: "Ask the running agent which vaults it holds unlocked, and until when.")
        var status = false

        @Flag(help: "With --status: as JSON (pid, socket, vaults: [{directory, unlockedAt, expiresAt}], secretService: {busName, collection} or null).")
        var json = false

        @Option(name: .customLong("idle-timeout"), help: ArgumentHelp("Forget a vault's key after DURATION without use (default 15m).",
                                                                      valueName: "DURATION"),
                transform: HumanDuration.seconds(in:))
        var idleTimeout: Int64 = 15 * 60

        @Option(name: .customLong("max-lifetime"), help: ArgumentHelp("Forget a vault's key DURATION after it was unlocked, at the latest (default 8h).",
                                                                      valueName: "DURATION"),
                transform: HumanDuration.seconds(in:))
        var maximumLifetime: Int64 = 8 * 3600

        @Flag(name: .customLong("secret-service"),
              help: "Also serve the Secret Service (org.freedesktop.secrets) on the session bus, the vault in --vault DIR as its default collection.")
        var secretService = false

        @Flag(help: "With --secret-service: take org.freedesktop.secrets from the program that owns it (e.g. gnome-keyring).")
        var replace = false

        @Option(help: ArgumentHelp(
            "With --secret-service: the vault served as the default collection (default: $VAULT_DIR, else $XDG_DATA_HOME/vault, else ~/.local/share/vault).",
            valueName: "DIR"), completion: .directory)
        var vault: String?

        var needsSecretService: Bool { secretService }

        func validate() throws {
            if shell, status { throw ValidationError("give either --sh or --status") }
            if json, !status { throw ValidationError("--json goes with --status") }
            if status, secretService { throw ValidationError("--secret-service starts an agent; --status only asks the running one") }
            if replace, !secretService { throw ValidationError("--replace goes with --secret-service") }
            if vault != nil, !secretService { throw ValidationError("--vault goes with --secret-service (the agent holds every vault 'vault unlock' gives it)") }
            guard idleTimeout > 0, maximumLifetime > 0 else { throw ValidationError("--idle-timeout and --max-lifetime must be above 0s") }
        }

        func run(_ context: CommandContext) async throws {
            if status { return try printStatus() }
            if shell { return try startInBackground() }
            guard let path = AgentSocketPath.resolve() else {
                throw UsageError("the agent has no socket: neither VAULT_AGENT_SOCK nor XDG_RUNTIME_DIR is set",
                                 hint: "set VAULT_AGENT_SOCK=PATH (in a folder of your own), or use eval \"$(vault agent --sh)\"")
            }
            // Keys in locked memory, left out of core dumps (which every command already disables).
            do {
                try SecureMemory.lockNewBuffers()
            } catch let error as SecureMemory.LockLimitTooLow {
                throw UsageError(error.description, hint: "the agent keeps keys only in memory that is never swapped out")
            }
            let server = try AgentServer(socketPath: path, idleTimeout: .seconds(idleTimeout), maximumLifetime: .seconds(maximumLifetime),
                                         environment: context.environment)
            if secretService {
                // After the socket is bound (so the provider's prompts can point at it), before any request is served.
                try server.startSecretService(try context.requireSecretService(), directory: servedDirectory, replace: replace,
                                              environment: context.environment)
            }
            server.run {
                AgentLog.write("listening on \(path) (keys forgotten after \(idleTimeout)s idle, \(maximumLifetime)s at most)")
            }
            AgentLog.write("stopped; every key forgotten")
        }

        /// The vault served as the Secret Service's default collection: `--vault`, else the default
        /// location, canonical when it exists (the agent names the vaults it holds by their canonical path).
        private var servedDirectory: String {
            let directory = vault ?? VaultLocation.defaultDirectory()
            return (try? VaultAgentClient.canonical(directory)) ?? directory
        }

        /// The options the agent started in the background gets: this command's, without `--sh`.
        var backgroundArguments: [String] {
            var arguments = ["vault", "agent", "--idle-timeout", "\(idleTimeout)s", "--max-lifetime", "\(maximumLifetime)s"]
            if secretService { arguments.append("--secret-service") }
            if replace { arguments.append("--replace") }
            if let vault { arguments += ["--vault", (try? VaultAgentClient.canonical(vault)) ?? vault] }
            return arguments
        }

        private func printStatus() throws {
            guard let client = VaultAgentClient.forCurrentUser() else { throw Self.noAgent }
            let status = try client.status()
            if json {
                let vaults: [JSONValue] = status.vaults.map {
                    ["directory": .string($0.directory), "unlockedAt": .string(RFC3339.string(from: $0.unlockedAt)),
                     "expiresAt": .string(RFC3339.string(from: $0.expiresAt))]
                }
                let served: JSONValue = status.secretService.map { ["busName": .string($0.busName), "collection": .string($0.collection)] } ?? .null
                let report: JSONValue = ["pid": .integer(Int128(status.pid)), "socket": .string(status.socket), "vaults": .array(vaults),
                                         "secretService": served]
                return try StandardIO.printOutput(bytes: try report.serialized(prettyPrinted: true) + [UInt8(ascii: "\n")])
            }
            var text = "agent \(status.pid) on \(TerminalText.escaped(status.socket))\n"
            if let served = status.secretService {
                text += "Secret Service: \(TerminalText.escaped(served.busName)), default collection \(TerminalText.escaped(served.collection))\n"
            }
            if status.vaults.isEmpty { text += "no vault unlocked\n" }
            for vault in status.vaults {
                text += "unlocked: \(TerminalText.escaped(vault.directory)) (since \(RFC3339.string(from: vault.unlockedAt)), "
                    + "forgotten at \(RFC3339.string(from: vault.expiresAt)) unless used)\n"
            }
            try StandardIO.printOutput(text)
        }

        /// Starts `vault agent` detached (its own session, standard streams on /dev/null), waits until it
        /// answers, and prints the lines for `eval`.
        private func startInBackground() throws {
            var path = AgentSocketPath.resolve()
            if path == nil {
                // As ssh-agent does: a private folder of its own under $TMPDIR.
                var template = Array(PathText.joining(PathText.temporaryDirectory(), "vault-agent-XXXXXX").utf8CString)
                guard let made = mkdtemp(&template) else { throw VaultError.io("creating the agent's folder", path: nil, errno: errno) }
                path = PathText.joining(String(cString: made), "agent.sock")
            }
            guard let path else { return }
            if let running = try? VaultAgentClient(socketPath: path).status() {
                if secretService, running.secretService == nil {
                    throw VaultError(.alreadyExists, "an agent already runs on this socket (pid \(running.pid)), without the Secret Service",
                                     path: path, fix: "stop it (kill \(running.pid)), then start it again with --secret-service")
                }
                return try printShellLines(socket: path, pid: running.pid, started: false)
            }
            let pid = try Self.spawnDetached(backgroundArguments, socket: path)
            let client = VaultAgentClient(socketPath: path)
            let deadline = ContinuousClock.now + .seconds(10)
            while ContinuousClock.now < deadline {
                // Ready once it answers, and with --secret-service once it owns the name.
                if let running = try? client.status(), !secretService || running.secretService != nil {
                    return try printShellLines(socket: path, pid: pid, started: true)
                }
                var status: Int32 = 0
                if waitpid(pid, &status, WNOHANG) == pid {
                    let code = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
                    throw VaultError(.agentUnavailable, "the agent stopped as it started (exit \(code))", path: path,
                                     fix: "run the same 'vault agent' command without --sh to see why")
                }
                usleep(20_000)
            }
            throw VaultError(.agentUnavailable, "the agent did not start within 10 s", path: path)
        }

        /// Starts this executable with `arguments` in a session of its own, standard streams on
        /// /dev/null, with `VAULT_AGENT_SOCK` set to `socket`.
        private static func spawnDetached(_ arguments: [String], socket: String) throws -> pid_t {
            setenv("VAULT_AGENT_SOCK", socket, 1)
            var launch = ProgramLaunch(executable: "/proc/self/exe", arguments: arguments)
            launch.searchesPath = false
            launch.standardInput = .null
            launch.standardOutput = .null
            launch.standardError = .null
            launch.newSession = true
            return try launch.start().mapError { VaultError.io("starting the agent", path: nil, errno: $0.errno) }.get()
        }

        private func printShellLines(socket: String, pid: Int32, started: Bool) throws {
            let quoted = "'" + socket.replacing("'", with: "'\\''") + "'"
            try StandardIO.printOutput("VAULT_AGENT_SOCK=\(quoted); export VAULT_AGENT_SOCK;\n"
                                       + "VAULT_AGENT_PID=\(pid); export VAULT_AGENT_PID;\n"
                                       + "echo \(started ? "Agent" : "Agent already running,") pid \(pid);\n")
        }

        static var noAgent: VaultError {
            VaultError(.agentUnavailable, "no vault agent is configured: neither VAULT_AGENT_SOCK nor XDG_RUNTIME_DIR is set, or no socket is there",
                       fix: "start one with 'vault agent' (or eval \"$(vault agent --sh)\")")
        }
    }

    /// `vault unlock`: gives the agent the vault's key, asked for once.
    struct Unlock: ContextCommand {
        static let configuration = CommandConfiguration(
            commandName: "unlock",
            abstract: "Give the running agent the vault's key, so commands need no passphrase until it forgets it.",
            discussion: """
                The key comes from the usual places (--key-file, --passphrase-file, VAULT_KEY_FILE, \
                VAULT_PASSPHRASE), else from the pinentry program VAULT_PINENTRY names (as gpg-agent's \
                pinentry-program), else the terminal; it is sent over the agent's socket and derived there, \
                and the agent checks it opens the vault. With no agent answering: exit 69.
                """
        )

        @OptionGroup var options: VaultOptions

        func run(_ context: CommandContext) async throws {
            try context.requireFileStore(options)
            guard let client = VaultAgentClient.forCurrentUser() else { throw Agent.noAgent }
            guard SecretStore.exists(in: options.directory) else { throw VaultError.vaultNotFound(path: options.directory) }
            _ = try client.status()
            try client.unlock(directory: options.directory, key: try key(context))
            ErrorReport.note("Unlocked \(TerminalText.escaped(options.directory)) in the agent.")
        }

        /// The key: from a file or the environment when one is given, else through `$VAULT_PINENTRY`
        /// when it names a program (gpg-agent's convention), else the usual prompt.
        private func key(_ context: CommandContext) throws -> VaultKey {
            guard case .asked = context.keySource(options), let program = context.environment[.vaultPinentry] else {
                return try context.key(options)
            }
            return .passphrase(try Pinentry.askPassphrase(program: program, description: "Passphrase for the vault in \(options.directory)",
                                                          environment: context.environment))
        }
    }

    /// `vault lock`: the agent forgets every key.
    struct Lock: ContextCommand {
        static let configuration = CommandConfiguration(
            commandName: "lock",
            abstract: "Make the running agent forget every vault key it holds."
        )

        func run(_ context: CommandContext) async throws {
            guard let client = VaultAgentClient.forCurrentUser() else { throw Agent.noAgent }
            try client.lock()
            ErrorReport.note("The agent forgot every key.")
        }
    }
}
