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
package struct CommandEnvironment: Sendable {
    /// A variable `vault` reads (its name is `name`).
    package enum Variable: Int, Sendable {
        /// `--store`'s default.
        case vaultStore
        /// `--store-name`'s default.
        case vaultStoreName
        /// `--key-file`'s default (third in the key order).
        case vaultKeyFile
        /// The pinentry program `vault unlock` asks through.
        case vaultPinentry
        /// The home directory (`~/` in completed paths, the agent's rules file).
        case home
        /// The agent's rules file's folder.
        case xdgConfigHome
        /// The terminal a pinentry asks on.
        case gpgTTY
        /// The terminal's type, for a pinentry.
        case term
        /// The locale, for a pinentry (first of the three).
        case lcAll
        /// The locale, for a pinentry (second).
        case lcCType
        /// The locale, for a pinentry (third).
        case lang
        /// The browser `vault signin --browser` starts.
        case browser
        /// systemd's socket activation: the process the sockets are for.
        case listenPID
        /// systemd's socket activation: how many sockets were passed.
        case listenFDs
        /// Where `--clip` looks for its clipboard program, and what `vault demo`'s steps run with.
        case path
        /// A Wayland session: `--clip` tries `wl-copy` first.
        case waylandDisplay
        /// The audit logs' folder's parent (`vault agent`, `vault audit`).
        case xdgStateHome

        /// The variable's name in the environment.
        var name: String { Self.names[rawValue] }

        /// Every variable's name, in the order of the cases (a plain array: reading the environment
        /// at start-up instantiates no generic type of its own, docs/BENCHMARKS.md).
        fileprivate static let names = ["VAULT_STORE", "VAULT_STORE_NAME", "VAULT_KEY_FILE", "VAULT_PINENTRY", "HOME",
                                        "XDG_CONFIG_HOME", "GPG_TTY", "TERM", "LC_ALL", "LC_CTYPE", "LANG", "BROWSER",
                                        "LISTEN_PID", "LISTEN_FDS", "PATH", "WAYLAND_DISPLAY", "XDG_STATE_HOME"]
    }

    /// The non-empty values, by `Variable.rawValue`.
    private let values: [String?]

    private init(values: [String?]) {
        self.values = values
    }

    /// An environment with these values (a test's); empty values count as unset.
    package init(_ given: [Variable: String] = [:]) {
        values = Variable.names.indices.map { index in
            Variable(rawValue: index).flatMap { given[$0] }.flatMap { $0.isEmpty ? nil : $0 }
        }
    }

    /// The process's environment, read now with `getenv(3)`: the entry pipeline calls it once.
    package static func process() -> CommandEnvironment {
        var values: [String?] = []
        values.reserveCapacity(Variable.names.count)
        for name in Variable.names {
            if let value = getenv(name), value.pointee != 0 {
                values.append(String(cString: value))
            } else {
                values.append(nil)
            }
        }
        return CommandEnvironment(values: values)
    }

    /// The non-empty value of `variable`, or nil.
    package subscript(_ variable: Variable) -> String? { values[variable.rawValue] }
}
