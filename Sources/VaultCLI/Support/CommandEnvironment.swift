#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The environment variables `vault` reads, read once with `getenv(3)` when the process starts
/// and carried by the command context (swiftly's `run(_ ctx:)`: a command gets its environment
/// from the context, and a test hands it one of its own). Code that runs outside a command
/// context (the entry pipeline's routing, shell completion, the agent's server) takes one as a
/// parameter.
///
/// Only the variables named in `Variable` are read, and only their values are copied (never the
/// whole environment: `ProcessInfo.environment` would build a `String` of every variable). The
/// passphrases are not among them: `PassphraseEnvironment` takes those into zeroising memory.
/// An empty value counts as unset.
struct CommandEnvironment: Sendable {
    /// A variable `vault` reads.
    enum Variable: String, CaseIterable, Sendable {
        /// `--store`'s default.
        case vaultStore = "VAULT_STORE"
        /// `--store-name`'s default.
        case vaultStoreName = "VAULT_STORE_NAME"
        /// `--key-file`'s default (third in the key order).
        case vaultKeyFile = "VAULT_KEY_FILE"
        /// The pinentry program `vault unlock` asks through.
        case vaultPinentry = "VAULT_PINENTRY"
        /// The home directory (`~/` in completed paths, the agent's rules file).
        case home = "HOME"
        /// The agent's rules file's folder.
        case xdgConfigHome = "XDG_CONFIG_HOME"
        /// The terminal a pinentry asks on.
        case gpgTTY = "GPG_TTY"
        /// The terminal's type, for a pinentry.
        case term = "TERM"
        /// The locale, for a pinentry (first of the three).
        case lcAll = "LC_ALL"
        /// The locale, for a pinentry (second).
        case lcCType = "LC_CTYPE"
        /// The locale, for a pinentry (third).
        case lang = "LANG"
        /// The browser `vault signin --browser` starts.
        case browser = "BROWSER"
        /// systemd's socket activation: the process the sockets are for.
        case listenPID = "LISTEN_PID"
        /// systemd's socket activation: how many sockets were passed.
        case listenFDs = "LISTEN_FDS"
    }

    /// The non-empty values.
    private let values: [Variable: String]

    /// An environment with these values (a test's); empty values count as unset.
    init(_ values: [Variable: String] = [:]) {
        self.values = values.filter { !$0.value.isEmpty }
    }

    /// The process's environment, read now with `getenv(3)`: the entry pipeline calls it once.
    static func process() -> CommandEnvironment {
        var values: [Variable: String] = [:]
        for variable in Variable.allCases {
            if let value = getenv(variable.rawValue), value.pointee != 0 { values[variable] = String(cString: value) }
        }
        return CommandEnvironment(values)
    }

    /// The non-empty value of `variable`, or nil.
    subscript(_ variable: Variable) -> String? { values[variable] }
}
