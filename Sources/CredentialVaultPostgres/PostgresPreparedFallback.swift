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
    ///
    /// The statement is sent on a leased connection only while it is open (`PostgresOpenSend`),
    /// and its rows are read before the lease ends: a connection the server closed between the
    /// pool's lease and the write fails the read at once instead of leaving it unanswered. The
    /// whole read runs on the connection's event loop, where its answer arrives (measured: no
    /// slower than the pool's own `execute`, whose answer resumes the caller on another thread).
    func lastRow<S: PostgresPreparedStatement>(of statement: S) async throws -> S.Row? {
        let logger = options.logger
        if preparedReads.load(ordering: .relaxed) {
            do {
                return try await client.withConnection { connection in
                    try await connection.sendingIfOpen {
                        var answer: S.Row?
                        for try await row in try await connection.execute(statement, logger: logger) { answer = row }
                        return answer
                    }
                }
            } catch where PostgresEntryRead.isServerError(error) {
                if PostgresEntryRead.isUnsupported(error) { preparedReads.store(false, ordering: .relaxed) }
            }
        }
        let query = PostgresQuery(unsafeSQL: S.sql, binds: try statement.makeBindings())
        return try await client.withConnection { connection in
            try await connection.sendingIfOpen {
                var answer: S.Row?
                for try await row in try await connection.query(query, logger: logger) { answer = try statement.decodeRow(row) }
                return answer
            }
        }
    }
}
