import PostgresNIO

/// A read sent as a named prepared statement, or unprepared where that cannot be.
extension PostgresSecretStore {
    /// The last row `statement` answers: sent prepared, or as the same query unprepared once a
    /// pooler in front of the server refused named statements (`preparedReads`).
    ///
    /// A pooler that cannot keep named statements has this store read unprepared from now on.
    /// Any other server error is met by the same query unprepared, for this read only:
    /// postgres-nio keeps a failed Parse on its connection, and a genuine error (a table
    /// dropped by a restore) fails the unprepared query too and is reported as before.
    func lastRow<S: PostgresPreparedStatement>(of statement: S) async throws -> S.Row? {
        let logger = options.logger
        var answer: S.Row?
        var prepared = preparedReads.load(ordering: .relaxed)
        if prepared {
            do {
                for try await row in try await client.execute(statement, logger: logger) { answer = row }
            } catch where PostgresEntryRead.isServerError(error) {
                if PostgresEntryRead.isUnsupported(error) { preparedReads.store(false, ordering: .relaxed) }
                prepared = false
            }
        }
        if !prepared {
            let query = PostgresQuery(unsafeSQL: S.sql, binds: try statement.makeBindings())
            for try await row in try await client.query(query, logger: logger) { answer = try statement.decodeRow(row) }
        }
        return answer
    }
}
