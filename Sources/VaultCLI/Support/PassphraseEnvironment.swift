#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization
import VaultCrypto

/// `VAULT_PASSPHRASE` and `VAULT_NEW_PASSPHRASE`, taken out of the environment before anything
/// else runs.
///
/// At start-up (`VaultCommand.main`, before parsing) each is copied with `getenv(3)` straight
/// into zeroising `SecureBytes`, never into a `String`; then its bytes in the environment
/// block are overwritten with zeros in place and the variable is removed with `unsetenv(3)`.
/// So no later reader of the environment (Foundation's `ProcessInfo.environment` builds a
/// `String` of every variable and never wipes it), no child process, and no reader of
/// `/proc/PID/environ` finds the passphrase. The parent shell still has it: the variable is
/// a convenience for scripts, `--passphrase-file` keeps it out of every environment.
enum PassphraseEnvironment {
    /// The variables taken.
    static let names = ["VAULT_PASSPHRASE", "VAULT_NEW_PASSPHRASE"]

    private static let taken = Mutex<[String: SecureBytes]>([:])

    /// Takes every variable in `names` out of the environment. Call once, first thing.
    static func capture() {
        for name in names {
            guard let value = getenv(name) else { continue }
            let length = strlen(value)
            if length > 0 {
                let bytes = SecureBytes(copying: UnsafeRawBufferPointer(start: value, count: length))
                taken.withLock { $0[name] = bytes }
            }
            // Drop the variable, then zero its whole "NAME=value" string where it is (the
            // initial environment lives on the stack and is what /proc/PID/environ shows;
            // unsetenv only unhooks the pointer and frees nothing).
            let entryStart = value - (name.utf8.count + 1)
            unsetenv(name)
            memset(entryStart, 0, name.utf8.count + 1 + length)
        }
    }

    /// Puts the variables taken back into the environment, right before this process is replaced
    /// by a helper executable (`HelperExecutable.execute`): the helper gets the environment this
    /// process was started with, and takes them out again first thing. `capture()` takes them
    /// out again if the handover fails.
    static func restoreForHandOver() {
        for (name, value) in taken.withLock({ $0 }) {
            var text = [UInt8](repeating: 0, count: value.count + 1)
            value.withUnsafeBytes { bytes in
                for (index, byte) in bytes.enumerated() { text[index] = byte }
            }
            text.withUnsafeBufferPointer { buffer in
                buffer.withMemoryRebound(to: CChar.self) { characters in
                    if let start = characters.baseAddress { _ = setenv(name, start, 1) }
                }
            }
            SecureWipe.wipe(&text)
        }
    }

    /// The non-empty value `name` had at start-up.
    static func value(_ name: String) -> SecureBytes? {
        taken.withLock { $0[name] }
    }
}
