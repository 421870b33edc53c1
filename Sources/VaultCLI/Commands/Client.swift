#if canImport(Glibc)
import Glibc
#else
#error("vault runs on Linux (Glibc)")
#endif
import ArgumentParser
import CredentialVault
import FoundationEssentials

extension VaultCommand {
    /// `vault client`: stores the OAuth client configuration that `token`, `refresh` and `signout` use.
    struct Client: ContextCommand {
        static let configuration = CommandConfiguration(
            commandName: "client",
            abstract: "Store the OAuth client configuration (issuer, client id, endpoints; a secret goes into the vault).",
            discussion: """
                The issuer, client id, scopes, endpoints and CA bundle (with its SHA-256) are sealed in the vault, \
                since they decide where tokens are sent; a client secret is read from standard input or \
                --secret-file (never from an argument) and kept in the vault too. A configuration that an earlier \
                version kept in the plain profile is refused until 'vault client --seal' shows it and seals it. \
                With --grant client_credentials, 'vault token' fetches a token for the client itself when the \
                stored one is missing or expired (daemons). 'vault client --remove' forgets the configuration.
                """
        )

        @OptionGroup var options: VaultOptions
        @OptionGroup var client: ClientOptions

        @Option(help: ArgumentHelp("Client authentication: none, basic (client_secret_basic) or post (client_secret_post).",
                                   valueName: "METHOD"))
        var auth: ClientAuthMethod = .none

        @Option(help: ArgumentHelp("refresh_token (a user signs in) or client_credentials (a daemon).", valueName: "GRANT"))
        var grant: ClientGrant = .refreshToken

        @Option(name: .customLong("secret-file"), help: ArgumentHelp("Read the client secret from this file (else standard input).",
                                                                     valueName: "FILE"))
        var secretFile: String?

        @Flag(help: "Forget the stored configuration and secret.")
        var remove = false

        @Flag(help: "Seal the configuration an earlier version kept in the plain profile, after showing it (check it first).")
        var seal = false

        func validate() throws {
            if grant == .clientCredentials, auth == .none {
                throw ValidationError("the client_credentials grant needs a confidential client: --auth basic or post")
            }
        }

        func run(_ context: CommandContext) async throws {
            let onPostgres = try context.storeSelection(options) != .file
            if remove, onPostgres {
                let store = try await context.storage(.fleetSessions, options)
                for name in StoredClientConfiguration.entryNames {
                    do {
                        try await store.removeEntry(named: name, owner: "")
                    } catch VaultError.Code.notFound {
                        continue
                    }
                }
                return ErrorReport.note("Forgot the OAuth client configuration.")
            }
            if remove {
                try StoredClientConfiguration.removeProfileCopy(options)
                if SecretStore.exists(in: options.directory) {
                    try await context.storage(.vaultFile(), options).update { transaction in
                        for name in StoredClientConfiguration.entryNames
                        where transaction.metadata(named: name, owner: "") != nil {
                            try transaction.remove(named: name, owner: "")
                        }
                    }
                }
                ErrorReport.note("Forgot the OAuth client configuration.")
                return
            }
            if seal { return try await sealProfileCopy(context) }
            let stored = try client.stored(authMethod: auth, grant: grant)
            let described = "'\(stored.clientID)' (\(auth.rawValue), \(grant.rawValue))"
            var secret: SecureBytes?
            if auth.sendsSecret {
                let read: SecureBytes
                if let secretFile {
                    read = try VaultKeySecretFile.read(secretFile)
                } else {
                    guard !StandardIO.isTerminal(StandardIO.input) else {
                        throw UsageError("pipe the client secret into 'vault client' or pass --secret-file FILE")
                    }
                    read = try StandardIO.readAll(from: StandardIO.input, limit: 4096, name: "standard input")
                }
                let trimmed = VaultKeySecretFile.trimmingNewline(read)
                guard !trimmed.isEmpty else { throw UsageError("the client secret is empty") }
                secret = trimmed
            }
            // --dpop: the key already sealed is kept (tokens bound to it must go on refreshing); a
            // new one is made only when there is none (no vault yet, or no key in it). A key that
            // cannot be read (wrong key, tampered) stops here: replacing it would unbind the tokens.
            var dpopKey: SecureBytes?
            if client.dpop {
                do {
                    dpopKey = try await context.dpopKey(options)
                } catch let error as VaultError where error.code == .notFound {
                    dpopKey = try client.newDPoPKey()
                }
            }
            if onPostgres {
                try await stored.save(to: try await context.storage(.fleetSessions, options), secret: secret, dpopKey: dpopKey)
                return ErrorReport.note("Stored the OAuth client \(described) in the PostgreSQL store.")
            }
            try await stored.save(to: try await context.storage(.vaultFile(.openOrCreate), options), secret: secret, dpopKey: dpopKey)
            try StoredClientConfiguration.removeProfileCopy(options)
            ErrorReport.note("Stored the OAuth client \(described).")
        }

        /// `--seal`: shows the profile's unsealed copy (none of it is secret) and seals it in the vault.
        private func sealProfileCopy(_ context: CommandContext) async throws {
            guard try context.storeSelection(options) == .file else { throw UsageError("--seal is for the vault file's profile") }
            guard let copy = try StoredClientConfiguration.profileCopy(options) else {
                throw VaultError(.notFound, "profile.json holds no OAuth client configuration to seal", path: options.directory)
            }
            let shown: [(String, String)] = [("client id", copy.clientID), ("issuer", copy.issuer ?? "-"),
                                             ("token endpoint", copy.tokenEndpoint ?? "(discovered)"),
                                             ("revocation endpoint", copy.revocationEndpoint ?? "(discovered)"),
                                             ("device endpoint", copy.deviceEndpoint ?? "(discovered)"),
                                             ("authentication", copy.authMethod.rawValue), ("grant", copy.grant.rawValue),
                                             ("CA bundle", copy.caBundle ?? "-")]
            ErrorReport.note("Sealing this OAuth client configuration from profile.json:\n"
                             + shown.map { "  \($0): \(TerminalText.escaped($1))" }.joined(separator: "\n"))
            var sealed = copy
            sealed.caBundleSHA256 = try copy.caBundle.map(StoredClientConfiguration.fingerprint(ofBundle:))
            try await sealed.save(to: try await context.storage(.vaultFile(), options), secret: nil)
            try StoredClientConfiguration.removeProfileCopy(options)
            ErrorReport.note("Sealed it in the vault; profile.json no longer holds it.")
        }
    }
}

/// Reading a client secret from a file: the bytes, one trailing newline dropped.
enum VaultKeySecretFile {
    static func read(_ path: String) throws -> SecureBytes {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw VaultError(.notFound, "cannot read the secret file", path: path)
        }
        defer { close(descriptor) }
        do {
            return try StandardIO.readAll(from: descriptor, limit: 4096, name: "the secret file")
        } catch let error as VaultError where error.code == .invalidInput {
            throw VaultError(.invalidInput, "the secret file is larger than 4096 bytes", path: path)
        }
    }

    static func trimmingNewline(_ secret: SecureBytes) -> SecureBytes {
        var end = secret.count
        secret.withUnsafeBytes { bytes in
            while end > 0, bytes[end - 1] == UInt8(ascii: "\n") || bytes[end - 1] == UInt8(ascii: "\r") { end -= 1 }
        }
        return end == secret.count ? secret : secret.slice(0..<end)
    }
}
