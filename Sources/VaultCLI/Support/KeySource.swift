import CredentialVault

/// Where the vault key comes from, decided once from the command's options and environment. The
/// key order, first match wins:
///
/// 1. `--key-file FILE`, 2. `--passphrase-file FILE`, 3. `$VAULT_KEY_FILE` (a systemd credential's
/// path too), 4. `$VAULT_PASSPHRASE`, 5. asked: the user's `vault agent` for the entry commands,
/// the pinentry program (`$VAULT_PINENTRY`) for `vault unlock`, else the terminal.
///
/// Every reader of the order reads this value: the command context's key (`KeySources.current`)
/// and its choice of the agent, `vault unlock`'s pinentry, `vault wipe --destroy-key-file` and
/// the shell completion of entry names.
enum KeySource: Sendable {
    /// `--key-file`.
    case keyFile(path: String)
    /// `--passphrase-file`.
    case passphraseFile(path: String)
    /// `$VAULT_KEY_FILE`.
    case environmentKeyFile(path: String)
    /// `$VAULT_PASSPHRASE`, as the process found it.
    case environmentPassphrase(SecureBytes)
    /// None of them: the key has to be asked for.
    case asked

    /// The first source given.
    /// - Parameters:
    ///   - keyFile: `--key-file`.
    ///   - passphraseFile: `--passphrase-file`.
    ///   - environment: the command's environment (`$VAULT_KEY_FILE`).
    ///   - passphrase: `$VAULT_PASSPHRASE`'s value.
    init(keyFile: String?, passphraseFile: String?, environment: CommandEnvironment, passphrase: SecureBytes?) {
        if let keyFile {
            self = .keyFile(path: keyFile)
        } else if let passphraseFile {
            self = .passphraseFile(path: passphraseFile)
        } else if let path = environment[.vaultKeyFile] {
            self = .environmentKeyFile(path: path)
        } else if let passphrase {
            self = .environmentPassphrase(passphrase)
        } else {
            self = .asked
        }
    }

    /// The key file this source reads (`--key-file` or `$VAULT_KEY_FILE`), or nil.
    var keyFilePath: String? {
        switch self {
        case .keyFile(let path), .environmentKeyFile(let path): path
        case .passphraseFile, .environmentPassphrase, .asked: nil
        }
    }

    /// Whether the user's agent comes before this source: it comes after the two options and
    /// before the environment and the prompt.
    var yieldsToAgent: Bool {
        switch self {
        case .keyFile, .passphraseFile: false
        case .environmentKeyFile, .environmentPassphrase, .asked: true
        }
    }

    /// The key, read from its file or taken from the environment; nil when it has to be asked for.
    /// - Throws: the errors of reading the key file or the passphrase file.
    func keyWithoutAsking() throws -> VaultKey? {
        switch self {
        case .keyFile(let path), .environmentKeyFile(let path): try VaultKey.fromKeyFile(path: path)
        case .passphraseFile(let path): try VaultKey.fromPassphraseFile(path: path)
        case .environmentPassphrase(let passphrase): .passphrase(passphrase)
        case .asked: nil
        }
    }
}
