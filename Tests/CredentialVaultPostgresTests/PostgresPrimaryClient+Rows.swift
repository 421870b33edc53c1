@testable import CredentialVaultPostgres
import Logging
import PostgresNIO

extension PostgresPrimaryClient {
    /// Every row `query` answers, read on a connection of the store's pool and sent only while it
    /// is open, as the store's own statements (the tests' statements: the store has no pool-level
    /// `query`, see `PostgresPrimaryClient`). Nothing is logged.
    func rows(_ query: PostgresQuery) async throws -> [PostgresRow] {
        let quiet = Logger(label: "vault.tests.rows", factory: { _ in SwiftLogNoOpLogHandler() })
        return try await withConnection { connection in
            try await connection.queryIfOpen(query, logger: quiet).collect()
        }
    }
}
