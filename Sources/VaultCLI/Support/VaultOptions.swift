import ArgumentParser
import CredentialVault

/// The options every vault command takes: where the vault is and what opens it.
///
/// Commands include it with `@OptionGroup var options: VaultOptions` and hand it to the
/// `CommandContext`, which finds the key and opens the store with these options.
struct VaultOptions: ParsableArguments {
    @Option(help: ArgumentHelp(
        "The vault directory (default: $VAULT_DIR, else $XDG_DATA_HOME/vault, else ~/.local/share/vault).",
        valueName: "DIR"), completion: .directory)
    var vault: String?

    @Option(name: .customLong("store"), help: ArgumentHelp(
        "Where the vault is: 'file' (the vault file in --vault DIR), or postgres://USER@HOST:PORT/DATABASE (default: $VAULT_STORE, else file). The database password comes from PGPASSWORD or PGPASSFILE, never the URL.",
        valueName: "STORE"))
    var store: String?

    @Option(name: .customLong("store-name"), help: ArgumentHelp(
        "With a PostgreSQL store: which vault in the database (default: $VAULT_STORE_NAME, else 'default').", valueName: "NAME"))
    var storeName: String?

    @Option(name: .customLong("key-file"), help: ArgumentHelp(
        "A 32-byte key file made by 'vault keygen' (default: $VAULT_KEY_FILE).", valueName: "FILE"), completion: .file())
    var keyFile: String?

    @Option(name: .customLong("passphrase-file"), help: ArgumentHelp(
        "Read the passphrase from FILE (mode 0600; one trailing newline is dropped).", valueName: "FILE"), completion: .file())
    var passphraseFile: String?

    @Flag(name: .customLong("no-prompt"), help: "Never ask on the terminal; fail when a passphrase or confirmation is needed.")
    var noPrompt = false

    @Flag(name: .customLong("no-agent"), help: "Do not ask a running 'vault agent'; open the vault directly.")
    var noAgent = false

    @Flag(name: .customLong("accept-rollback"), help: ArgumentHelp(
        "Accept a vault older than one this machine has seen (a backup restored on purpose); the remembered generation is reset to it."))
    var acceptRollback = false

    @Flag(name: .customLong("accept-kdf-cost"), help: ArgumentHelp(
        "Open a passphrase vault whose scrypt cost is above what this build writes or this machine remembers (runs scrypt at that cost)."))
    var acceptKDFCost = false

    @Option(name: .customLong("lock-timeout"), help: ArgumentHelp(
        "Seconds to wait for another process's lock on the vault.", valueName: "SECONDS", visibility: .hidden))
    var lockTimeoutSeconds: Double = 10

    func validate() throws {
        if keyFile != nil, passphraseFile != nil {
            throw ValidationError("give either --key-file or --passphrase-file, not both")
        }
        guard lockTimeoutSeconds.isFinite, lockTimeoutSeconds >= 0, lockTimeoutSeconds <= 3600 else {
            throw ValidationError("--lock-timeout must be between 0 and 3600 seconds")
        }
    }

    /// The vault directory: `--vault`, else the default location.
    var directory: String { vault ?? VaultLocation.defaultDirectory() }

    /// How long to wait for another process's lock.
    var lockTimeout: Duration { .milliseconds(Int64((lockTimeoutSeconds * 1000).rounded())) }

    /// Store options for this invocation.
    var storeOptions: SecretStore.Options {
        var options = SecretStore.Options(lockTimeout: lockTimeout)
        options.acceptRollback = acceptRollback
        options.acceptsRaisedKDFCost = acceptKDFCost
        return options
    }

    /// The terminal to ask on, or nil under `--no-prompt` or without one.
    func terminal() -> Terminal? { Terminal.controlling(allowPrompt: !noPrompt) }
}
