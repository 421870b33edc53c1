#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ArgumentParser
import CredentialVault

extension VaultCommand {
    /// `vault exec [--env VAR=ENTRY] [--env-file FILE] [--file VAR=ENTRY] [--mask] -- COMMAND ARGS…`:
    /// runs a command with secrets in its environment or in files only it reads.
    struct Exec: ContextCommand {
        static let configuration = CommandConfiguration(
            commandName: "exec",
            abstract: "Run a command with secrets from the vault in its environment or files (never in its arguments).",
            discussion: """
                Each --env VAR=ENTRY puts the secret of ENTRY (a name, or a reference vault://NAME?owner=OWNER) \
                into the variable VAR of the command. Each --env-file FILE (python-dotenv syntax) sets its \
                variables; a value that is a reference vault://… is replaced by the secret, every other value is \
                set as written. Each --file VAR=ENTRY writes the secret to a file in a private folder (0700, \
                under $XDG_RUNTIME_DIR, else $TMPDIR) and sets VAR to its path; the folder is removed when the \
                command ends (a folder left by a killed vault is removed by the next 'vault exec'). \
                Later sources win: the environment, then each --env-file in order, then --env and --file.

                Without --mask the secrets are read, the command started, and vault's copies wiped at once; \
                vault then only waits. With --mask the command's output and errors pass through vault, which \
                replaces every secret of 4 bytes or more with <concealed by vault> and so keeps the secrets in \
                memory until the command ends. SIGINT, SIGTERM, SIGHUP and SIGQUIT are passed on to the command. \
                vault exits with the command's status; when a signal ends the command, vault ends by the same \
                signal. A command that is not found exits 127, one that cannot run 126; a reference that names \
                no entry stops vault before the command starts (66).

                Examples:
                  vault exec --env GITHUB_TOKEN=github -- ./deploy.sh
                  vault exec --env-file .env --mask -- npm start
                  vault exec --file TLS_KEY=tls/key -- ./server
                """
        )

        @OptionGroup var options: VaultOptions

        @Option(name: .customLong("env"), help: ArgumentHelp("Put the secret ENTRY (a name or a vault:// reference) into the variable VAR.",
                                                             valueName: "VAR=ENTRY"),
                transform: EnvironmentMapping.init(parsing:))
        var mappings: [EnvironmentMapping] = []

        @Option(name: .customLong("env-file"), help: ArgumentHelp("Set the variables of a .env file; vault://… values become secrets.",
                                                                  valueName: "FILE"),
                completion: .file())
        var environmentFiles: [String] = []

        @Option(name: .customLong("file"), help: ArgumentHelp("Write the secret ENTRY to a private file and put its path into VAR.",
                                                              valueName: "VAR=ENTRY"),
                transform: EnvironmentMapping.init(parsing:))
        var fileMappings: [EnvironmentMapping] = []

        @Flag(help: "Replace the secrets in the command's output and errors with <concealed by vault>.")
        var mask = false

        @Argument(parsing: .postTerminator, help: ArgumentHelp("The command and its arguments, after --.", valueName: "COMMAND"))
        var command: [String] = []

        func validate() throws {
            guard !mappings.isEmpty || !environmentFiles.isEmpty || !fileMappings.isEmpty else {
                throw ValidationError("give at least one --env VAR=ENTRY, --env-file FILE or --file VAR=ENTRY")
            }
            guard !command.isEmpty else { throw ValidationError("give the command after --, e.g. vault exec --env TOKEN=api -- curl …") }
            let names = (mappings + fileMappings).map(\.variable)
            guard Set(names).count == names.count else { throw ValidationError("each VAR of --env and --file may be given once") }
        }

        func run(_ context: CommandContext) async throws {
            let environmentFiles = try self.environmentFiles.map { path in
                (path: path, file: try DotEnvFile(parsing: SecureFileSystem.readInputFile(path, maxBytes: Self.maximumFileBytes), path: path))
            }
            // From here a SIGINT or SIGTERM is kept for the command, not the end of vault, so the
            // secret files below are always removed by this process.
            ChildProcess.installForwarding()
            ProgramSecretFolder.removeLeftovers()
            let folder = fileMappings.isEmpty ? nil : try ProgramSecretFolder.create()
            defer { folder?.remove() }
            var prepared = try await prepare(context, environmentFiles: environmentFiles, folder: folder)
            let masking = mask ? try MaskedOutput(values: prepared.secretValues) : nil
            if mask {
                for short in prepared.shortSecrets {
                    ErrorReport.note("vault: warning: the secret in \(short) is shorter than \(SecretMasker.minimumLength) bytes and is not masked")
                }
            }
            prepared.secretValues = []
            let pid: pid_t
            do {
                // The secrets' last references go with the spawn (which consumes its copy), so
                // their buffers are wiped now, not kept alive in `prepared` while vault waits.
                defer { prepared = Prepared() }
                pid = try ChildProcess.spawn(command, secrets: prepared.assignments,
                                             standardOutput: masking?.outputWriter, standardError: masking?.errorWriter)
            }
            // Nothing of the vault stays in this process while it waits: the store, its keys and
            // the key are released (zeroised) now. With --mask only the values to mask stay.
            await context.close()
            let outcome = try masking.map { try $0.relayUntilEnd(command: pid) { folder?.remove() } } ?? ChildProcess.wait(for: pid)
            folder?.remove()
            switch outcome {
            case .exited(let status):
                endProcess(status)
            case .signalled(let number):
                _ = signal(number, SIG_DFL)
                _ = raise(number)
                endProcess(128 + number)
            }
        }

        /// What the command gets, read from the vault before it starts.
        private struct Prepared {
            /// The variables to set, each once (the last source wins).
            var assignments: [(name: String, value: SecureBytes)] = []
            /// The secrets to mask.
            var secretValues: [SecureBytes] = []
            /// Variables whose secret is too short to mask.
            var shortSecrets: [String] = []

            mutating func set(_ name: String, _ value: SecureBytes, isSecret: Bool) {
                assignments.removeAll { $0.name.utf8.elementsEqual(name.utf8) }
                assignments.append((name, value))
                guard isSecret else { return }
                secretValues.append(value)
                if value.count < SecretMasker.minimumLength { shortSecrets.append(name) }
            }
        }

        /// Opens the vault and reads every secret; the store is gone when this returns.
        private func prepare(_ context: CommandContext, environmentFiles: [(path: String, file: DotEnvFile)],
                             folder: ProgramSecretFolder?) async throws -> Prepared {
            let resolver = ReferenceResolver(storage: try await context.storage(.entries, options))
            var prepared = Prepared()
            for (path, file) in environmentFiles {
                for binding in file.values {
                    guard let value = binding.value else { continue }
                    let origin = "\(path), line \(binding.line)"
                    guard !binding.key.utf8.contains(UInt8(ascii: "=")), !binding.key.utf8.contains(0), !value.utf8.contains(0) else {
                        throw UsageError("\(TerminalText.escaped(origin)): a variable's name holds '=' or a NUL byte, or its value a NUL byte, "
                                         + "which an environment cannot hold")
                    }
                    let parsed: SecretReference?
                    do {
                        parsed = try SecretReference.parse(value)
                    } catch let error as VaultError {
                        throw VaultError(error.code, "\(origin): \(error.message)", fix: error.fix)
                    }
                    if let reference = parsed {
                        let secret = try await resolver.secret(for: reference, origin: origin)
                        try Self.requireNoNUL(secret, origin: origin)
                        prepared.set(binding.key, secret, isSecret: true)
                    } else {
                        prepared.set(binding.key, SecureBytes(copying: Array(value.utf8)), isSecret: false)
                    }
                }
            }
            for mapping in mappings {
                let secret = try await resolver.secret(for: mapping.reference, origin: "--env \(mapping.variable)")
                try Self.requireNoNUL(secret, origin: "--env \(mapping.variable)")
                prepared.set(mapping.variable, secret, isSecret: true)
            }
            for mapping in fileMappings {
                guard let folder else { break }
                let secret = try await resolver.secret(for: mapping.reference, origin: "--file \(mapping.variable)")
                let path = try folder.write(mapping.variable, contents: secret)
                prepared.set(mapping.variable, SecureBytes(copying: Array(path.utf8)), isSecret: false)
                prepared.secretValues.append(secret)
                if secret.count < SecretMasker.minimumLength { prepared.shortSecrets.append(mapping.variable) }
            }
            return prepared
        }

        private static func requireNoNUL(_ secret: SecureBytes, origin: String) throws {
            guard !secret.withUnsafeBytes({ $0.contains(0) }) else {
                throw UsageError("\(TerminalText.escaped(origin)): the secret contains a NUL byte, which an environment variable cannot hold; "
                                 + "use --file instead")
            }
        }

        /// The largest .env file read (16 MiB).
        static let maximumFileBytes = 16 * 1024 * 1024
    }
}

/// One `--env VAR=ENTRY` or `--file VAR=ENTRY`.
struct EnvironmentMapping: Sendable {
    let variable: String
    let reference: SecretReference

    /// Parses `VAR=ENTRY`; VAR is a portable variable name (letters, digits, underscore, not
    /// starting with a digit); ENTRY an entry name or a reference `vault://NAME?owner=OWNER`.
    init(parsing text: String) throws {
        guard let equals = text.firstIndex(of: "=") else {
            throw ValidationError("'\(TerminalText.escaped(text))' is not VAR=ENTRY")
        }
        let variable = String(text[..<equals]), entry = String(text[text.index(after: equals)...])
        let allowed = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
        guard let first = variable.first, !first.isNumber, variable.allSatisfy(allowed.contains) else {
            throw ValidationError("'\(TerminalText.escaped(variable))' is not a variable name (letters, digits and _, not starting with a digit)")
        }
        guard !entry.isEmpty else { throw ValidationError("\(variable)= needs an entry name after '='") }
        self.variable = variable
        self.reference = try SecretReference.parse(entry) ?? SecretReference(name: entry)
    }
}

/// Ends vault with `status`. The corresponding C function is `exit`.
private func endProcess(_ status: Int32) -> Never {
    exit(status)
}
