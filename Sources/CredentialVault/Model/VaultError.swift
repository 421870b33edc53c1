/// The one error type of the credential vault.
///
/// Each cause has its own `code` so callers (and the CLI's exit codes) can tell
/// "wrong key" from "tampered" from "busy". Messages name the thing and the fix,
/// never a secret.
public struct VaultError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong, as a stable, extensible code.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The stable name of the code, e.g. "wrongKey".
        public let rawValue: String
        /// Wraps a raw code name.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The raw name.
        public var description: String { rawValue }

        /// A vault, entry or file does not exist.
        public static let notFound = Code(rawValue: "notFound")
        /// A vault or entry already exists and replacing was not asked for.
        public static let alreadyExists = Code(rawValue: "alreadyExists")
        /// The passphrase or key does not open this vault.
        public static let wrongKey = Code(rawValue: "wrongKey")
        /// A key file or key is malformed (wrong length, unreadable).
        public static let invalidKey = Code(rawValue: "invalidKey")
        /// Authenticated data failed its check after the key was accepted: the file was altered.
        public static let tampered = Code(rawValue: "tampered")
        /// The file is not a well-formed vault (bad magic, truncated, bad lengths).
        public static let corrupt = Code(rawValue: "corrupt")
        /// The file has a format version this build does not read.
        public static let unsupportedVersion = Code(rawValue: "unsupportedVersion")
        /// The file's KDF parameters are outside the compiled-in policy.
        public static let kdfOutsidePolicy = Code(rawValue: "kdfOutsidePolicy")
        /// The file asks for a KDF cost above what this build writes: refused before the KDF runs.
        public static let suspiciousKDFParameters = Code(rawValue: "suspiciousKDFParameters")
        /// The file is older than a generation this store has already seen.
        public static let rollbackDetected = Code(rawValue: "rollbackDetected")
        /// A file or directory has unsafe ownership, mode, links or is a symlink.
        public static let insecurePermissions = Code(rawValue: "insecurePermissions")
        /// Another process holds the vault lock past the timeout.
        public static let busy = Code(rawValue: "busy")
        /// An input is out of range (name too long, secret too large, bad kind).
        public static let invalidInput = Code(rawValue: "invalidInput")
        /// A system call failed (disk full, I/O error, permission denied).
        public static let io = Code(rawValue: "io")
        /// The operation needs a signed-in user and there is none.
        public static let notSignedIn = Code(rawValue: "notSignedIn")
        /// The session cannot continue: no refresh token, or the server rejected it (`invalid_grant`).
        public static let sessionExpired = Code(rawValue: "sessionExpired")
        /// A sign-in met an item conflict that the merge policy said to fail on.
        public static let mergeConflict = Code(rawValue: "mergeConflict")
        /// The minimum time to live asked for is longer than a freshly issued access token lives.
        public static let minTTLTooLarge = Code(rawValue: "minTTLTooLarge")
        /// The app declined or cancelled the sign-in that `requireSignIn` was waiting for.
        public static let signInCancelled = Code(rawValue: "signInCancelled")
        /// The authorization server could not be reached or failed transiently; nothing changed.
        public static let serverUnavailable = Code(rawValue: "serverUnavailable")
        /// The authorization server answered with an OAuth error response.
        public static let serverRefused = Code(rawValue: "serverRefused")
        /// The operation does not apply to this kind of session: a fleet session (PostgreSQL) has no
        /// guest, profile, onboarding, items or settings.
        public static let unsupportedOperation = Code(rawValue: "unsupportedOperation")
        /// No `vault agent` answers on the user's socket (none started, or it died mid-request).
        public static let agentUnavailable = Code(rawValue: "agentUnavailable")
        /// The agent answers but does not hold this vault unlocked (never unlocked, locked, timed
        /// out, or its key changed since).
        public static let vaultLocked = Code(rawValue: "vaultLocked")
        /// One of the agent's per-caller rules refuses this caller this operation on this entry.
        public static let deniedByRule = Code(rawValue: "deniedByRule")
        /// No D-Bus session bus to connect to, or it refused the call, or no program on it owns the
        /// name asked for (the Secret Service): not the vault agent, which is `agentUnavailable`.
        public static let busUnavailable = Code(rawValue: "busUnavailable")
    }

    /// What went wrong.
    public let code: Code
    /// A sentence saying what and where, without secrets.
    public let message: String
    /// The file or directory concerned, when there is one.
    public let path: String?
    /// What the user can do about it, when we know, in words that name no command or flag.
    public let fix: String?
    /// Which situation this is, finer than `code`, so that a front end (the `vault` command)
    /// can add its own hint naming its own commands; the library itself never does.
    package let topic: Topic?

    /// Situations a front end may want to give its own hint for.
    package enum Topic: Sendable, Equatable {
        case weakPassphrase
        case entryNotFound, vaultNotFound, entryExists, vaultExists, wrongKey
        case needsPassphrase, needsKeyFile, keyFileMalformed, alreadySignedIn
        /// An older (or differently keyed) vault than this machine remembers: a restore needs saying so.
        case rollback
        /// KDF parameters raised above what this build writes or this machine remembers.
        case kdfCostRaised
        /// Another process held a lock (the error's path) past the timeout.
        case busy
        /// The vault holds a signed-in session but `profile.json` is missing.
        case profileMissing
        /// The stored OAuth client configuration cannot be used as it is: store it again.
        case storedClientUnusable
        /// profile.json holds an OAuth client configuration the vault does not seal (`differs`: one
        /// that differs from the sealed one).
        case storedClientProfileCopy(differs: Bool)
        /// The stored client's CA bundle changed (`changed`) or has no fingerprint: store the client with its bundle again.
        case storedClientCABundle(changed: Bool)
        /// Entry attributes refused because the vault file is kept at an older format version.
        case attributesNeedNewerFormat
        /// An entry of a kind newer than the first five (`totp`) refused by a vault file kept at an older format version.
        case kindNeedsNewerFormat
        /// Entry history asked of a vault file kept at an older format version.
        case historyNeedsNewerFormat
        /// A write refused at the file size cap while the vault keeps earlier versions (fewer kept would make room).
        case fileCapWithHistory
        /// An entry that belongs to the session (`ReservedEntryNames`), refused for this use.
        case reservedEntry(ReservedEntryNames.Use)
    }

    /// Creates an error. Never put secret bytes in any field.
    public init(_ code: Code, _ message: String, path: String? = nil, fix: String? = nil) {
        self.init(code, message, path: path, fix: fix, topic: nil)
    }

    /// Creates an error with a topic for front ends.
    package init(_ code: Code, _ message: String, path: String? = nil, fix: String? = nil, topic: Topic?) {
        self.code = code
        self.message = message
        self.path = path
        self.fix = fix
        self.topic = topic
    }

    /// "message (path): fix".
    public var description: String {
        var text = message
        if let path { text += " (\(path))" }
        if let fix { text += ". \(fix)" }
        return text
    }
}

extension VaultError {
    /// An entry of that name does not exist. The name is quoted escaped (`TerminalText`).
    public static func entryNotFound(_ name: String) -> VaultError {
        VaultError(.notFound, "no entry named '\(TerminalText.escaped(name))'", fix: "list the entries to see their names", topic: .entryNotFound)
    }

    /// No vault at that location.
    public static func vaultNotFound(path: String) -> VaultError {
        VaultError(.notFound, "no vault here", path: path, fix: "create a vault here first, or open another directory",
                   topic: .vaultNotFound)
    }

    /// An entry of that name exists already. The name is quoted escaped (`TerminalText`).
    public static func entryExists(_ name: String) -> VaultError {
        VaultError(.alreadyExists, "an entry named '\(TerminalText.escaped(name))' already exists", fix: "replace it explicitly, or choose another name",
                   topic: .entryExists)
    }

    /// The key did not unwrap the data key.
    public static let wrongKey = VaultError(.wrongKey, "the passphrase or key file does not open this vault",
                                            fix: "check the key file or the passphrase", topic: .wrongKey)

    /// A region of the file failed authentication or parsing.
    public static func tampered(region: String, path: String? = nil) -> VaultError {
        VaultError(.tampered, "the vault failed its integrity check in the \(region)", path: path,
                   fix: "the file was altered or damaged; restore it from a backup")
    }

    /// The file is not a well-formed vault.
    public static func corrupt(_ reason: String, path: String? = nil) -> VaultError {
        VaultError(.corrupt, "the vault file is malformed: \(reason)", path: path,
                   fix: "the file was truncated or is not a vault; restore it from a backup")
    }

    /// I/O failure with errno text.
    public static func io(_ operation: String, path: String?, errno code: Int32) -> VaultError {
        VaultError(.io, "\(operation) failed: \(SystemErrorText.describe(code))", path: path)
    }
}

extension VaultError.Code {
    /// Matches a `VaultError` with this code, so that `catch VaultError.Code.busy { … }` works
    /// (as GRDB's `DatabaseError` does).
    public static func ~= (code: VaultError.Code, error: any Error) -> Bool {
        (error as? VaultError)?.code == code
    }
}
