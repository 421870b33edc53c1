import CredentialVault

/// Where a command's vault is: the vault file in a directory (the default), or a store in a
/// PostgreSQL database, chosen by `--store URL` or `VAULT_STORE` (`--store-name`/`VAULT_STORE_NAME`
/// picks one vault among several in the database).
enum StoreSelection: Equatable {
    /// The vault file in `--vault DIR` (or the default directory).
    case file
    /// The store `storeName` in the database at `url` (`postgres://USER@HOST:PORT/DATABASE`).
    case postgres(url: String, storeName: String)

    /// The store name used when none is given.
    static let defaultStoreName = "default"

    /// Reads `--store` (else `VAULT_STORE`) and `--store-name` (else `VAULT_STORE_NAME`).
    /// `file` (or nothing) selects the vault file.
    /// - Parameter environment: the command's environment (`CommandContext.environment`).
    /// - Throws: `.invalidInput` for any other value.
    init(store: String?, storeName: String?, environment: CommandEnvironment) throws {
        let value = store ?? environment[.vaultStore]
        guard let value, value != "file" else {
            self = .file
            return
        }
        guard value.hasPrefix("postgres://") || value.hasPrefix("postgresql://") else {
            // The value is not echoed: a mistyped URL may carry a password.
            throw VaultError(.invalidInput, "the store given is neither 'file' nor a postgres:// URL",
                             fix: "give --store postgres://USER@HOST:PORT/DATABASE, or leave it out for the vault file")
        }
        self = .postgres(url: value, storeName: storeName ?? environment[.vaultStoreName] ?? Self.defaultStoreName)
    }

    /// The URL and store name of a PostgreSQL store, or nil for the vault file.
    var postgres: (url: String, storeName: String)? {
        guard case let .postgres(url, storeName) = self else { return nil }
        return (url, storeName)
    }
}

extension VaultOptions {
    /// Runs `body` on `storage`, then `close`s it whatever happened.
    static func closing<S, T>(_ storage: S, _ close: (S) async -> Void, _ body: (S) async throws -> T) async throws -> T {
        do {
            let result = try await body(storage)
            await close(storage)
            return result
        } catch {
            await close(storage)
            throw error
        }
    }

    /// How long one PostgreSQL operation may take: `--lock-timeout` (default 10 s).
    var operationTimeout: Duration { lockTimeout > .zero ? lockTimeout : .seconds(10) }
}
