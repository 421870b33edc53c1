import CredentialVault
import FoundationEssentials

/// `docker-credential-vault [VAULT OPTIONS] store|get|erase|list`: docker's credential helper
/// (the protocol of github.com/docker/docker-credential-helpers).
///
/// Each server's credential is the entry `docker:SERVERURL`, kind `password` (or
/// `refreshToken` for an identity token, user name `<token>`), whose secret holds the
/// `username` and `secret` lines (`DockerCredentialRecord`, which carries LF and NUL too).
/// Errors are printed on standard output with exit status 1, as docker expects; a missing server is exactly "credentials not found in native keychain".
/// Never prompts: the key comes from the options or `$VAULT_KEY_FILE` / `$VAULT_PASSPHRASE`.
enum DockerCredentialHelper {
    /// The name under which `vault` acts as this helper.
    static let executableName = "docker-credential-vault"
    /// The prefix of every entry name the helper writes.
    static let namePrefix = "docker:"
    /// docker's `ErrCredentialsNotFound` text, which its client matches exactly.
    static let notFoundMessage = "credentials not found in native keychain"
    /// docker's `ErrCredentialsMissingServerURL` text.
    static let missingServerURLMessage = "no credentials server URL"
    /// docker's `ErrCredentialsMissingUsername` text.
    static let missingUsernameMessage = "no credentials username"

    /// A failure docker should see: its text on standard output, exit 1.
    struct Failure: Error {
        let message: String
    }

    /// Runs one action and returns the exit status.
    static func main(_ arguments: [String], context: CommandContext) -> Int32 {
        guard let action = arguments.last else {
            StandardIO.printError("usage: \(executableName) [--vault DIR] [--key-file FILE] store|get|erase|list|version\n")
            return 1
        }
        do {
            let options = try VaultOptions.parse(Array(arguments.dropLast()) + ["--no-prompt"])
            switch action {
            case "store": try store(readInput(), options: options, context: context)
            case "get": try StandardIO.printOutput(try get(serverURL(readInput()), options: options, context: context))
            case "erase": try erase(serverURL(readInput()), options: options, context: context)
            case "list": try StandardIO.printOutput(bytes: try list(options: options, context: context))
            case "version": try StandardIO.printOutput("\(executableName) (vault \(VaultVersion.current))\n")
            default: throw Failure(message: "Unknown credential action `\(TerminalText.escaped(action))`")
            }
            return 0
        } catch let failure as Failure {
            try? StandardIO.printOutput(failure.message + "\n")
            return 1
        } catch let error as VaultError {
            // A vault problem (no key, wrong key, corrupt): docker shows the output line; details on standard error.
            _ = ErrorReport.report(error, oauth: nil)
            try? StandardIO.printOutput("vault: " + error.message + "\n")
            return 1
        } catch {
            _ = ErrorReport.report(error, oauth: nil)
            try? StandardIO.printOutput("vault: " + TerminalText.escaped(String(describing: error)) + "\n")
            return 1
        }
    }

    private static func readInput() throws -> SecureBytes {
        try StandardIO.readAll(from: StandardIO.input, limit: VaultLimits.maximumSecretBytes, name: "standard input")
    }

    /// The server URL of `get` and `erase`: the whole input, surrounding white space removed.
    static func serverURL(_ input: SecureBytes) throws -> String {
        let text = input.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }.trimmingWhitespace()
        guard !text.isEmpty else { throw Failure(message: missingServerURLMessage) }
        return text
    }

    /// The entry name for `serverURL`.
    static func entryName(_ serverURL: String) -> String { namePrefix + serverURL }

    /// `store`: `{"ServerURL":…,"Username":…,"Secret":…}`; replaces the server's credential.
    static func store(_ input: SecureBytes, options: VaultOptions, context: CommandContext) throws {
        let fields = try CredentialJSON.parseObject(input, secretKeys: ["Secret"])
        guard let server = fields.text["ServerURL"], !server.isEmpty else { throw Failure(message: missingServerURLMessage) }
        guard let username = fields.text["Username"], !username.isEmpty else { throw Failure(message: missingUsernameMessage) }
        let record = try DockerCredentialRecord.encoded(username: username, secret: fields.secrets["Secret"] ?? .empty)
        let entry = NewEntry(name: entryName(server), secret: record,
                             kind: username == "<token>" ? .refreshToken : .password, label: "docker credential")
        try context.entryOperation(options, throughAgent: { client, directory in
            _ = try client.store([entry], replace: true, directory: directory)
        }, directly: { try $0.put(entry, replace: true) })
    }

    /// `get`: the JSON answer for `serverURL`.
    static func get(_ serverURL: String, options: VaultOptions, context: CommandContext) throws -> SecureBytes {
        let name = entryName(serverURL)
        let secret: SecureBytes
        do {
            secret = try context.entryOperation(options, throughAgent: { client, directory in
                try client.entry(named: name, owner: "", directory: directory).secret
            }, directly: { try $0.secret(named: name) })
        } catch let error as VaultError where error.code == .notFound && SecretStore.exists(in: options.directory) {
            throw Failure(message: notFoundMessage)
        } catch let error as VaultError where error.code == .invalidInput {
            throw Failure(message: notFoundMessage) // a URL that could never be a name was never stored
        }
        let record = DockerCredentialRecord.decoded(secret)
        return CredentialJSON.object([
            ("ServerURL", SecureBytes(copying: Array(serverURL.utf8))),
            ("Username", SecureBytes(copying: Array(record.username.utf8))),
            ("Secret", record.secret),
        ]).appending(SecureBytes(copying: [0x0A]))
    }

    /// `erase`: removes the server's credential; a missing one is docker's not-found error.
    static func erase(_ serverURL: String, options: VaultOptions, context: CommandContext) throws {
        do {
            let name = entryName(serverURL)
            try context.entryOperation(options, throughAgent: { client, directory in
                try client.remove(named: name, owner: "", directory: directory)
            }, directly: { try $0.remove(named: name) })
        } catch let error as VaultError where (error.code == .notFound && SecretStore.exists(in: options.directory))
            || error.code == .invalidInput {
            throw Failure(message: notFoundMessage)
        }
    }

    /// `list`: `{"SERVERURL":"USERNAME",…}` for every stored server, JSON-escaped (controls, C1,
    /// bidi and format characters as `\uXXXX`) and never terminal-escaped: it is machine output.
    static func list(options: VaultOptions, context: CommandContext) throws -> [UInt8] {
        func pair(_ name: String, _ secret: SecureBytes) -> (String, String) {
            (String(name.dropFirst(namePrefix.count)), DockerCredentialRecord.decoded(secret).username)
        }
        let pairs = try context.entryOperation(options, throughAgent: { client, directory in
            let names = try client.list(directory: directory, owner: "").map(\.name).filter { $0.hasPrefix(namePrefix) }
            guard !names.isEmpty else { return [] }
            return try client.entries(named: names, owner: "", directory: directory).map { pair($0.metadata.name, $0.secret) }
        }, directly: { store in
            try store.snapshot { view in
                try view.list(owner: "").filter { $0.name.hasPrefix(namePrefix) }.map { pair($0.name, try view.secret(named: $0.name, owner: "")) }
            }
        })
        var object: [String: JSONValue] = [:]
        for (server, username) in pairs { object[server] = .string(username) }
        return try JSONValue.object(object).serialized() + [0x0A]
    }
}
