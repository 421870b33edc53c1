import CredentialVault
import FoundationEssentials
import PostgresNIO

extension PostgresSecretStore {
    /// Destroys the vault named `configuration.storeName`: every entry row and its state row (with
    /// the wrapped data key), in one transaction. Needs no key, so a vault whose key is lost can still
    /// be destroyed. What it cannot reach: PostgreSQL keeps deleted rows in dead tuples until
    /// VACUUM, in the write-ahead log, on replicas and in backups; those copies still open with the
    /// same key (docs/SECURITY.md). Other stores in the database are untouched.
    /// - Returns: false when the database holds no vault of that name.
    /// - Throws: `.serverUnavailable` when the server cannot be reached; `.invalidInput` for an
    ///   unusable trust roots file (`PGSSLROOTCERT`).
    public static func destroy(configuration: PostgresStoreConfiguration, options: Options = Options()) async throws -> Bool {
        let (client, runner) = try makeClient(configuration, options: options)
        defer { runner.cancel() }
        let storeName = configuration.storeName
        let logger = options.logger
        let destroyed = try await PostgresErrors.guarding(configuration, timeout: options.operationTimeout, watch: client.selection.deadlines) {
            try await client.withTransaction(logger: logger) { connection -> Bool in
                for try await present in try await connection.queryIfOpen(
                    "SELECT to_regclass('vault_stores') IS NOT NULL AND to_regclass('vault_entries') IS NOT NULL",
                    logger: logger).decode(Bool.self) where !present {
                    return false
                }
                try await connection.queryIfOpen("""
                    DELETE FROM vault_entries WHERE vault_id IN (SELECT vault_id FROM vault_stores WHERE store_name = \(storeName))
                    """, logger: logger)
                var removed = false
                for try await _ in try await connection.queryIfOpen(
                    "DELETE FROM vault_stores WHERE store_name = \(storeName) RETURNING 1", logger: logger).decode(Int32.self) {
                    removed = true
                }
                return removed
            }
        }
        runner.cancel()
        await runner.value
        return destroyed
    }
}
