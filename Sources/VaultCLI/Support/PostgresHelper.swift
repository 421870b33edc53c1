import CredentialVault
import Synchronization
import VaultCrypto

/// What the PostgreSQL store adds to the command line. `vault-postgres` (Sources/VaultPostgresMain)
/// links `CredentialVaultPostgres` and provides it; `vault` does not link it (postgres-nio brings
/// swift-crypto and the full Foundation with ICU: 28 MB → 81 MB), and hands such a command to
/// `vault-postgres` instead (`PostgresHelper`).
package protocol PostgresCommandSupport: Sendable {
    /// Opens the store `storeName` in the database at `url`.
    func open(url: String, storeName: String, key: VaultKey, timeout: Duration) async throws -> any FleetSessionStore
    /// Creates the store `storeName` (and the tables if needed).
    func create(url: String, storeName: String, key: VaultKey, timeout: Duration) async throws -> any FleetSessionStore
    /// Deletes the store's rows and its state row; false when there was none. Needs no key.
    func destroy(url: String, storeName: String, timeout: Duration) async throws -> Bool
}

/// A store whose sessions are shared by a fleet (`PostgresSecretStore`): a session is a name
/// (`--session`), its tokens are entries owned by it, and a refresh happens once across every
/// process that needs one at the same time (an advisory lock held through check, refresh and save).
package protocol FleetSessionStore: SecretStorage {
    /// Saves a session's tokens in one transaction (a response without a refresh token keeps the old one).
    func saveCredentials(_ credentials: Credentials, session: String) async throws
    /// The session's credentials valid for `minTTL`, refreshed through `refresher` (once across the fleet) when not.
    func validCredentials(session: String, minTTL: Duration,
                          refresher: @escaping @Sendable (SecureBytes) async throws -> Credentials) async throws -> Credentials
    /// The session's tokens as stored. - Throws: `.notSignedIn` when it has none.
    func storedCredentials(session: String) async throws -> Credentials
    /// Removes the session's tokens; returns them (for revocation), or nil when there were none.
    func removeCredentials(session: String) async throws -> Credentials?
}

/// Hands a command line that names a PostgreSQL store to `vault-postgres`, the same commands
/// linked with the PostgreSQL store (`HelperExecutable`).
enum PostgresHelper {
    /// The helper executable.
    static let executable = HelperExecutable(name: "vault-postgres", purpose: "a PostgreSQL store",
                                             fix: "install it (scripts/install --with-postgres), or use the vault file")

    /// The PostgreSQL support of this executable: set by `vault-postgres` before parsing, nil in `vault`.
    static let support = Mutex<(any PostgresCommandSupport)?>(nil)

    /// The support, or an error naming the missing helper.
    static func required() throws -> any PostgresCommandSupport {
        if let support = support.withLock({ $0 }) { return support }
        throw executable.missing()
    }

    /// True when the command line or `VAULT_STORE` names a PostgreSQL store: any argument before
    /// `--` that is (or ends in `=` followed by) a `postgres://` URL. It may say yes for a label
    /// that looks like a URL; the helper then runs the command just the same.
    static func isNeeded(arguments: [String]) -> Bool {
        func isURL(_ text: Substring) -> Bool { text.hasPrefix("postgres://") || text.hasPrefix("postgresql://") }
        for argument in arguments.dropFirst() {
            if argument == "--" { break }
            let text = Substring(argument)
            if isURL(text) { return true }
            if argument.hasPrefix("--"), let equals = text.firstIndex(of: "="), isURL(text[text.index(after: equals)...]) { return true }
        }
        return KeySources.environmentValue("VAULT_STORE").map { isURL(Substring($0)) } ?? false
    }
}
