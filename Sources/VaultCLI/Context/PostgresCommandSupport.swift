import CredentialVault

/// What the PostgreSQL store adds to the command line. `vault-postgres` (Sources/VaultPostgresMain)
/// links `CredentialVaultPostgres` and provides it; `vault` does not link it (postgres-nio brings
/// swift-crypto and the full Foundation with ICU: 28 MB → 81 MB), and hands such a command to
/// `vault-postgres` instead (the entry pipeline, `StoreRouting`).
package protocol PostgresCommandSupport: Sendable {
    /// Opens the store `storeName` in the database at `url`, refusing a database state older than
    /// this machine remembers of it (unless `acceptRollback`: `--accept-rollback`).
    func open(url: String, storeName: String, key: VaultKey, timeout: Duration, acceptRollback: Bool) async throws -> any FleetSessionStore
    /// Creates the store `storeName` (and the tables if needed).
    func create(url: String, storeName: String, key: VaultKey, timeout: Duration) async throws -> any FleetSessionStore
    /// Deletes the store's rows and its state row; false when there was none. Needs no key.
    func destroy(url: String, storeName: String, timeout: Duration) async throws -> Bool
}
