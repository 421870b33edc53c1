/// The minimum strength of a new passphrase, checked when a vault is created and when its
/// passphrase is changed, never when an existing vault is opened.
///
/// The rule is a length floor in bytes (of whatever encoding the passphrase was typed in;
/// passphrases are bytes and are never normalised). scrypt makes each guess cost about a
/// quarter of a second, which protects a passphrase of several random words, not "hunter2".
/// A caller that knows better (a test, a passphrase from a generator) opts out explicitly
/// with `SecretStore.Options.allowsWeakPassphrase`.
public enum PassphraseStrength {
    /// The shortest passphrase accepted for a new vault or a new key: 12 bytes.
    public static let minimumBytes = 12

    /// Refuses a passphrase shorter than `minimumBytes`; key material always passes.
    /// - Throws: `VaultError` `.invalidInput` naming the floor (never the passphrase).
    public static func check(_ key: VaultKey) throws(VaultError) {
        guard case let .passphrase(bytes) = key, bytes.count < minimumBytes else { return }
        throw VaultError(.invalidInput,
                         "the new passphrase is \(bytes.count) bytes; at least \(minimumBytes) are required",
                         fix: "choose a longer passphrase (several random words), use a key file, or allow a weak passphrase explicitly",
                         topic: .weakPassphrase)
    }
}
