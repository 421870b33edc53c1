import CredentialVault

/// Finds the key that opens a vault (from its `KeySource`, which holds the key order; a prompt on
/// the terminal with echo off last), or the new one for `vault passwd`.
///
/// Without a terminal and without the others it fails at once (exit 64): it never waits
/// for input that cannot come.
enum KeySources {
    /// The longest passphrase typed on a terminal.
    static let maximumTypedPassphraseBytes = 4096

    /// The key from `source`, asked on the terminal when it has to be asked for.
    /// - Parameters:
    ///   - source: the command's key source (`CommandContext.keySource`).
    ///   - options: the global options (the terminal, the vault's directory for the prompt).
    ///   - confirmNew: ask twice when typed, because the passphrase is being set.
    /// - Returns: the key.
    /// - Throws: `UsageError` when there is no source; the errors of reading it.
    /// Called by `CommandContext.key` only, which keeps the result for the rest of the process.
    static func current(_ source: KeySource, options: VaultOptions, confirmNew: Bool) throws -> VaultKey {
        if let key = try source.keyWithoutAsking() { return key }
        if let terminal = options.terminal() {
            let prompt = confirmNew ? "New passphrase for the vault: " : "Passphrase for \(options.directory): "
            return try ask(terminal, prompt: prompt, confirm: confirmNew)
        }
        throw UsageError(
            "no key for the vault: give --key-file FILE, --passphrase-file FILE or set VAULT_PASSPHRASE "
                + "(there is no terminal to ask on)",
            hint: "VAULT_KEY_FILE works like --key-file; run in a terminal to be asked for the passphrase")
    }

    /// The new key for `vault passwd`: `--new-key-file`, `--new-passphrase-file`,
    /// `$VAULT_NEW_PASSPHRASE`, or asked twice on the terminal.
    /// - Throws: `UsageError` when there is no source; the errors of reading it.
    static func new(keyFile: String?, passphraseFile: String?, options: VaultOptions,
                    passphrases: CapturedPassphrases) throws -> VaultKey {
        if let keyFile { return try VaultKey.fromKeyFile(path: keyFile) }
        if let passphraseFile { return try VaultKey.fromPassphraseFile(path: passphraseFile) }
        if let passphrase = passphrases.value("VAULT_NEW_PASSPHRASE") { return .passphrase(passphrase) }
        if let terminal = options.terminal() { return try ask(terminal, prompt: "New passphrase: ", confirm: true) }
        throw UsageError(
            "no new key: give --new-key-file FILE, --new-passphrase-file FILE or set VAULT_NEW_PASSPHRASE "
                + "(there is no terminal to ask on)",
            hint: nil)
    }

    /// Asks for a passphrase with echo off; when `confirm`, asks again and compares.
    private static func ask(_ terminal: Terminal, prompt: String, confirm: Bool) throws -> VaultKey {
        let first = try terminal.readHidden(prompt: prompt, limit: maximumTypedPassphraseBytes)
        guard !first.isEmpty else {
            throw VaultError(.invalidKey, "the passphrase is empty", fix: "type a non-empty passphrase")
        }
        if confirm {
            let second = try terminal.readHidden(prompt: "Repeat it: ", limit: maximumTypedPassphraseBytes)
            guard first == second else {
                throw UsageError("the two passphrases differ; nothing was changed", hint: "run the command again")
            }
        }
        return .passphrase(first)
    }
}
