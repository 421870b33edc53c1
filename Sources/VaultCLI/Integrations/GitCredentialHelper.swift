import CredentialVault
import FoundationEssentials

/// `git-credential-vault [VAULT OPTIONS] get|store|erase`: the git credential helper.
///
/// git starts it with the attributes on standard input and, for `get`, reads the answer
/// from standard output. It never prompts (git may run it without a terminal): the key
/// comes from `--key-file`, `--passphrase-file`, `$VAULT_KEY_FILE` or `$VAULT_PASSPHRASE`,
/// else it fails at once with a message on standard error, which git shows.
enum GitCredentialHelper {
    /// The name under which `vault` acts as this helper.
    static let executableName = "git-credential-vault"

    /// Runs one request and returns the exit status.
    /// - Parameter arguments: the arguments after argv[0]; the last is the operation.
    static func main(_ arguments: [String], context: CommandContext) -> Int32 {
        guard let operation = arguments.last else {
            ErrorReport.show("usage: \(executableName) [--vault DIR] [--key-file FILE] get|store|erase",
                             hint: "git runs it for you: git config --global credential.helper vault")
            return VaultExitStatus.usage
        }
        do {
            let options = try VaultOptions.parse(Array(arguments.dropLast()) + ["--no-prompt"])
            // Always drain standard input first: git writes the whole request before reading.
            let input = try StandardIO.readAll(from: StandardIO.input, limit: VaultLimits.maximumSecretBytes, name: "standard input")
            let request = GitCredential(CredentialFields.parse(input, secretKeys: GitCredential.secretKeys))
            switch operation {
            case "get":
                if let found = try get(request, options: options, context: context) {
                    try StandardIO.printOutput(try found.response())
                }
            case "store": try store(request, options: options, context: context)
            case "erase": try erase(request, options: options, context: context)
            default: break // gitcredentials(7): unknown operations are silently ignored.
            }
            return VaultExitStatus.success
        } catch {
            if let status = ErrorReport.report(error, oauth: nil) { return status }
            ErrorReport.show(TerminalText.escaped(String(describing: error)), hint: nil)
            return VaultExitStatus.usage
        }
    }

    /// The newest unexpired stored credential that matches `request`, with its secret.
    static func get(_ request: GitCredential, options: VaultOptions, context: CommandContext) throws -> GitCredential? {
        guard request.protocolName != nil || request.host != nil else { return nil }
        return try context.entryOperation(options, throughAgent: { client, directory in
            try newestMatch(for: request, in: try client.list(directory: directory, owner: "")) {
                try client.entry(named: $0, owner: "", directory: directory).secret
            }
        }, directly: { store in
            try store.snapshot { view -> GitCredential? in
                try newestMatch(for: request, in: view.list(owner: "")) { try view.secret(named: $0, owner: "") }
            }
        })
    }

    /// The newest unexpired entry of `entries` matching `request`, with its secret read by `secret`.
    private static func newestMatch(for request: GitCredential, in entries: [EntryMetadata],
                                    secret: (String) throws -> SecureBytes) throws -> GitCredential? {
        let now = Date()
        let candidates = entries.compactMap { metadata -> (EntryMetadata, GitCredential)? in
            guard !metadata.isExpired(at: now), let stored = GitCredential(entryName: metadata.name),
                  request.matches(stored) else { return nil }
            return (metadata, stored)
        }
        guard let (metadata, identity) = candidates.max(by: { $0.0.updatedAt < $1.0.updatedAt }) else { return nil }
        var found = identity
        found.readSecret(try secret(metadata.name))
        found.passwordExpiry = metadata.expiresAt
        return found.password == nil ? nil : found
    }

    /// Stores a complete credential (protocol, host or path, username, password; empty values
    /// count, as in git's credential-store), replacing the one of the same identity; an
    /// incomplete or already expired one is ignored, as git's own helpers do.
    static func store(_ request: GitCredential, options: VaultOptions, context: CommandContext) throws {
        guard request.protocolName != nil, request.host != nil || request.path != nil, request.username != nil,
              request.password != nil else { return }
        if let expiry = request.passwordExpiry, expiry <= Date() { return }
        let entry = NewEntry(name: request.entryName, secret: try request.storedSecret(), kind: .password,
                             label: "git credential", expiresAt: request.passwordExpiry)
        try context.entryOperation(options, throughAgent: { client, directory in
            _ = try client.store([entry], replace: true, directory: directory)
        }, directly: { try $0.put(entry, replace: true) })
    }

    /// Removes every stored credential matching `request` (and its password, when git sends one).
    /// A request without protocol and host removes nothing.
    static func erase(_ request: GitCredential, options: VaultOptions, context: CommandContext) throws {
        guard request.protocolName != nil || request.host != nil else { return }
        /// Whether the stored credential `metadata` names is one to erase (its secret read by `secret` when git sent a password).
        func erases(_ metadata: EntryMetadata, secret: (String) throws -> SecureBytes) throws -> Bool {
            guard let stored = GitCredential(entryName: metadata.name), request.matches(stored) else { return false }
            guard let password = request.password else { return true }
            var withSecret = stored
            withSecret.readSecret(try secret(metadata.name))
            return withSecret.password == password
        }
        try context.entryOperation(options, throughAgent: { client, directory in
            let names = try client.list(directory: directory, owner: "").filter { metadata in
                try erases(metadata) { try client.entry(named: $0, owner: "", directory: directory).secret }
            }.map(\.name)
            if !names.isEmpty { try client.remove(names: names, owner: "", rotatingDataKey: false, directory: directory) }
        }, directly: { store in
            try store.update { transaction in
                for metadata in transaction.list(owner: "") where try erases(metadata, secret: { try transaction.secret(named: $0, owner: "") }) {
                    try transaction.remove(named: metadata.name, owner: "")
                }
            }
        })
    }
}
