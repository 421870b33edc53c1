#if canImport(Glibc)
import Glibc
#else
#error("vault runs on Linux (Glibc)")
#endif
import ArgumentParser
import CredentialVault
import FoundationEssentials
import VaultCrypto

extension VaultCommand {
    /// `vault client`: stores the OAuth client configuration that `token`, `refresh` and `signout` use.
    struct Client: ContextCommand {
        static let configuration = CommandConfiguration(
            commandName: "client",
            abstract: "Store the OAuth client configuration (issuer, client id, endpoints; a secret goes into the vault).",
            discussion: """
                The issuer, client id, scopes and endpoints are kept in the plain profile; a client secret is \
                read from standard input or --secret-file (never from an argument) and kept in the vault. \
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

        func validate() throws {
            if grant == .clientCredentials, auth == .none {
                throw ValidationError("the client_credentials grant needs a confidential client: --auth basic or post")
            }
        }

        func run(_ context: CommandContext) async throws {
            let onPostgres = try options.storeSelection != .file
            if remove, onPostgres {
                let store = try await context.openFleetSessions(options)
                for name in [StoredClientConfiguration.fleetEntry, StoredClientConfiguration.secretEntry] {
                    do {
                        try await store.removeEntry(named: name, owner: "")
                    } catch VaultError.Code.notFound {
                        continue
                    }
                }
                return ErrorReport.note("Forgot the OAuth client configuration.")
            }
            if remove {
                try ProfileStore(directory: options.directory, lockTimeout: options.lockTimeout).update { profile in
                    profile.extra[StoredClientConfiguration.profileKey] = nil
                }
                if SecretStore.exists(in: options.directory) {
                    let store = try context.openStore(options)
                    if (try? store.metadata(named: StoredClientConfiguration.secretEntry)) != nil {
                        try store.remove(named: StoredClientConfiguration.secretEntry)
                    }
                }
                ErrorReport.note("Forgot the OAuth client configuration.")
                return
            }
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
            if onPostgres {
                try await stored.save(to: try await context.openFleetSessions(options), secret: secret)
                return ErrorReport.note("Stored the OAuth client \(described) in the PostgreSQL store.")
            }
            if let secret {
                _ = try context.openOrCreateStore(options)
                    .put(NewEntry(name: StoredClientConfiguration.secretEntry, secret: secret, transferable: false), replace: true)
            }
            try stored.save(options)
            ErrorReport.note("Stored the OAuth client \(described).")
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
