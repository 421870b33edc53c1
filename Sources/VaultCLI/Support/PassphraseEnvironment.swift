import CredentialVault
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `VAULT_PASSPHRASE` and `VAULT_NEW_PASSPHRASE`, taken out of the environment before anything
/// else runs.
///
/// At start-up (the entry pipeline, once the executable that runs the command is settled) each is copied with `getenv(3)` straight
/// into zeroising `SecureBytes`, never into a `String`; then its bytes in the environment
/// block are overwritten with zeros in place and the variable is removed with `unsetenv(3)`.
/// So no later reader of the environment (Foundation's `ProcessInfo.environment` builds a
/// `String` of every variable and never wipes it), no child process, and no reader of
/// `/proc/PID/environ` finds the passphrase. The parent shell still has it: the variable is
/// a convenience for scripts, `--passphrase-file` keeps it out of every environment.
enum PassphraseEnvironment {
    /// The variables taken.
    static let names = ["VAULT_PASSPHRASE", "VAULT_NEW_PASSPHRASE"]

    /// Takes every variable in `names` out of the environment. Called once, by the entry
    /// pipeline, after the command was handed to the executable that runs it (so a helper
    /// executable finds the variables where the caller put them, and `vault` never puts one back).
    /// - Returns: the non-empty values, in zeroising memory.
    static func capture() -> CapturedPassphrases {
        var taken: [String: SecureBytes] = [:]
        for name in names {
            guard let value = getenv(name) else { continue }
            let length = strlen(value)
            if length > 0 {
                taken[name] = SecureBytes(copying: UnsafeRawBufferPointer(start: value, count: length))
            }
            // Drop the variable, then zero its whole "NAME=value" string where it is (the
            // initial environment lives on the stack and is what /proc/PID/environ shows;
            // unsetenv only unhooks the pointer and frees nothing).
            let entryStart = value - (name.utf8.count + 1)
            unsetenv(name)
            memset(entryStart, 0, name.utf8.count + 1 + length)
        }
        return CapturedPassphrases(values: taken)
    }
}

/// The passphrase variables as the process found them (`PassphraseEnvironment.capture()`),
/// held by the command context.
struct CapturedPassphrases: Sendable {
    /// Variable name to value; only non-empty values.
    let values: [String: SecureBytes]

    /// The non-empty value `name` had at start-up.
    func value(_ name: String) -> SecureBytes? { values[name] }
}
