import CredentialVault

/// Text shared by the help pages.
enum HelpText {
    /// The root command's discussion: where keys come from, the environment, the exit statuses.
    static var rootDiscussion: String {
        let statuses = VaultExitStatus.meanings.map { row in
            let status = String(row.status)
            return "  " + status + String(repeating: " ", count: 5 - status.count) + row.meaning
        }
        return """
            Secrets are read from standard input or typed at a prompt, never taken from arguments.
            The key is the first of: --key-file, --passphrase-file, $VAULT_KEY_FILE, $VAULT_PASSPHRASE,
            a prompt on the terminal. With none of them and no terminal, a command fails at once.

            ENVIRONMENT:
              VAULT_DIR             the vault directory (default $XDG_DATA_HOME/vault, ~/.local/share/vault)
              VAULT_KEY_FILE        a key file, as --key-file
              VAULT_PASSPHRASE      the passphrase, when no key file is given
              VAULT_NEW_PASSPHRASE  the new passphrase for 'vault passwd'

            EXIT STATUS:

            """ + statuses.joined(separator: "\n")
    }
}
