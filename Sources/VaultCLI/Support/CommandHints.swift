import CredentialVault

/// The `vault` command's own hints: the library's errors say what to do in words that name
/// no command or flag; where the fix is a `vault` command or option, the CLI says which.
enum CommandHints {
    /// Under a failure inside libcrypto (`CryptoError.isLibraryFailure`).
    static let openSSLFailure = "check the OpenSSL configuration (OPENSSL_CONF, /etc/ssl/openssl.cnf): a provider or FIPS policy may refuse "
        + "an algorithm vault needs (AES-256-GCM, SHA-256, HMAC, HKDF, scrypt); 'openssl errstr CODE' explains an error code"

    /// The hint to print under `error`: the command-line one for its topic, else the library's fix.
    static func hint(for error: VaultError) -> String? {
        switch error.topic {
        case .entryNotFound?: "run 'vault list' to see the names"
        case .weakPassphrase?: "use at least 12 bytes, or pass --weak-passphrase to 'vault init' / 'vault passwd' to keep it anyway"
        case .vaultNotFound?: "create one with 'vault init' or pass --vault DIR"
        case .entryExists?: "use --replace to overwrite it"
        case .vaultExists?: "open it instead, or choose another --vault directory"
        case .wrongKey?: "check --key-file, VAULT_KEY_FILE or the passphrase"
        case .needsPassphrase?: "give the passphrase (VAULT_PASSPHRASE, --passphrase-file or the prompt) instead of a key file"
        case .needsKeyFile?: "give the key file with --key-file or VAULT_KEY_FILE"
        case .keyFileMalformed?: "create one with 'vault keygen FILE'"
        case .alreadySignedIn?: "sign out first ('vault signout')"
        case .profileMissing?: "restore profile.json from a backup, or end the session on purpose with 'vault signout --recover' (it revokes the tokens first)"
        case .kdfCostRaised?: "if the vault's key was changed on purpose elsewhere with a higher cost, run the command again with --accept-kdf-cost"
        case .rollback?: "put the newest copy back; if you restored this backup on purpose, run the command again with --accept-rollback"
        case .busy?: error.path.map { "wait and try again, or find the process holding it: fuser -v \(VaultError.shellQuoted($0))" }
            ?? "wait and try again"
        case .storedClientUnusable?: "store the client again with 'vault client'"
        case .storedClientProfileCopy(differs: false)?: "check the issuer and endpoints it names ('vault client --seal' shows them), "
            + "then seal it with 'vault client --seal', or store the client again with 'vault client'"
        case .storedClientProfileCopy(differs: true)?: "store the client again with 'vault client', or remove the profile's \"oauthClient\""
        case .storedClientCABundle(changed: false)?: "store the client again with 'vault client --ca-bundle'"
        case .storedClientCABundle(changed: true)?: "if the change is yours, store the client again with 'vault client --ca-bundle'"
        case .historyNeedsNewerFormat?: "run 'vault upgrade-format' first (releases before it cannot read the upgraded file)"
        case .attributesNeedNewerFormat?: "run 'vault upgrade-format' first (releases before it cannot read the upgraded file), or add the entry without --attribute"
        case .kindNeedsNewerFormat?: "run 'vault upgrade-format' first (releases before it cannot read the upgraded file)"
        case .fileCapWithHistory?: "keep fewer earlier versions with 'vault history --limit N' (0 keeps none), remove entries, or store large files elsewhere"
        case .reservedEntry(.store)?: "choose another name; 'vault client' stores the OAuth client, 'vault signin' the tokens"
        case .reservedEntry(.read)?: "'vault token' prints a valid access token; 'vault inspect' shows an entry without its secret"
        case .reservedEntry(.remove)?: "'vault signout' ends the session; 'vault client --remove' forgets the OAuth client"
        case nil: error.fix
        }
    }
}
