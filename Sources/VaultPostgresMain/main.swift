// `vault-postgres`: the `vault` command linked with the PostgreSQL store and the OAuth client. `vault` hands it any
// command line that names a postgres:// store (docs/ARCHITECTURE.md, "Helper executables").
import CredentialVault
import CredentialVaultPostgres
import VaultCLI
import VaultOAuthCLI
import VaultCrypto

/// Opens, creates and destroys PostgreSQL stores for the command line.
struct PostgresStores: PostgresCommandSupport {
    func open(url: String, storeName: String, key: VaultKey, timeout: Duration) async throws -> any FleetSessionStore {
        try await PostgresSecretStore.open(configuration: try PostgresStoreConfiguration(url: url, storeName: storeName), key: key,
                                           options: PostgresSecretStore.Options(operationTimeout: timeout))
    }

    func create(url: String, storeName: String, key: VaultKey, timeout: Duration) async throws -> any FleetSessionStore {
        try await PostgresSecretStore.create(configuration: try PostgresStoreConfiguration(url: url, storeName: storeName), key: key,
                                             options: PostgresSecretStore.Options(operationTimeout: timeout))
    }

    func destroy(url: String, storeName: String, timeout: Duration) async throws -> Bool {
        try await PostgresSecretStore.destroy(configuration: try PostgresStoreConfiguration(url: url, storeName: storeName),
                                              options: PostgresSecretStore.Options(operationTimeout: timeout))
    }
}

await VaultEntryPoint.run(postgres: PostgresStores(), oauth: OAuthCommands())
