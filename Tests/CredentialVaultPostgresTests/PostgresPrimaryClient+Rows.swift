@testable import CredentialVaultPostgres
import Logging
import PostgresNIO

extension PostgresPrimaryClient {
    /// Every row `query` answers, read on a connection of the store's pool (the tests' own
    /// statements: the store has no pool-level `query`, see `PostgresPrimaryClient`).
    func rows(_ query: PostgresQuery) async throws -> [PostgresRow] {
        try await withConnection { connection in
            try await connection.query(query, logger: Logger(label: "vault.tests.rows")).collect()
        }
    }
}
