// `vault-postgres`: the `vault` command linked with the PostgreSQL store and the OAuth client. `vault` hands it any
// command line that names a postgres:// store (docs/ARCHITECTURE.md, "Helper executables").
import CredentialVault
import CredentialVaultPostgres
import VaultCLI
import VaultOAuthCLI
import VaultCrypto

/// Opens, creates and destroys PostgreSQL stores for the command line.
struct PostgresStores: PostgresCommandSupport {
    /// The command line's options: this machine remembers each store's generation (as it does
    /// each vault file's), so a database put back to an older state is refused by every command.
    private func options(timeout: Duration, acceptRollback: Bool = false) -> PostgresSecretStore.Options {
        var options = PostgresSecretStore.Options(operationTimeout: timeout)
        options.rollbackMemory = .standard
        options.acceptRollback = acceptRollback
        return options
    }

    func open(url: String, storeName: String, key: VaultKey, timeout: Duration, acceptRollback: Bool) async throws -> any FleetSessionStore {
        try await PostgresSecretStore.open(configuration: try PostgresStoreConfiguration(url: url, storeName: storeName), key: key,
                                           options: options(timeout: timeout, acceptRollback: acceptRollback))
    }

    func create(url: String, storeName: String, key: VaultKey, timeout: Duration) async throws -> any FleetSessionStore {
        try await PostgresSecretStore.create(configuration: try PostgresStoreConfiguration(url: url, storeName: storeName), key: key,
                                             options: options(timeout: timeout))
    }

    func destroy(url: String, storeName: String, timeout: Duration) async throws -> Bool {
        try await PostgresSecretStore.destroy(configuration: try PostgresStoreConfiguration(url: url, storeName: storeName),
                                              options: PostgresSecretStore.Options(operationTimeout: timeout))
    }
}

await VaultEntryPoint.run(postgres: PostgresStores(), oauth: OAuthCommands())
