import Logging
import PostgresNIO

/// The store's client: each call goes to the pool of the current primary
/// (`PostgresPrimarySelection`), probing the hosts first when there is none or it was lost, and
/// a failure that means the primary was lost marks it so for the next call.
///
/// It has the two calls of `PostgresClient` the store makes, `withConnection` and `withTransaction`
/// (which sends `BEGIN`/`COMMIT`/`ROLLBACK` itself), so that the store's statements read the same
/// as with one server. There is no `query` or `execute`: the pool would write those statements
/// itself, without the open check of `PostgresOpenSend`, so the store sends every statement on a
/// connection it leased, and reads the rows before the lease ends. Errors are `PostgresClient`'s,
/// except a write refused as read-only (a standby), which becomes `.serverUnavailable`, and a
/// transaction's: what its closure threw, as thrown, or a failed `BEGIN`/`COMMIT`
/// (`PostgresTransactionCommandError`).
struct PostgresPrimaryClient: Sendable {
    let selection: PostgresPrimarySelection

    /// Runs `closure` in a transaction on the primary (as `PostgresClient.withTransaction`, but
    /// `BEGIN`, `COMMIT` and `ROLLBACK` are sent only on an open connection: `PostgresOpenSend`).
    /// Throws what `closure` threw (after the rollback), else `PostgresTransactionCommandError`.
    func withTransaction<Result>(
        logger: Logger,
        isolation: isolated (any Actor)? = #isolation,
        _ closure: (PostgresConnection) async throws -> sending Result
    ) async throws -> sending Result {
        let client = try await selection.primary()
        do {
            return try await client.withConnection(isolation: isolation) { connection in
                do {
                    try await connection.commandIfOpen("BEGIN", logger: logger)
                } catch {
                    throw PostgresTransactionCommandError(command: "BEGIN", underlying: error)
                }
                let value: Result
                do {
                    value = try await closure(connection)
                } catch {
                    // A connection the server closed has no transaction left to roll back. One that
                    // could not roll back is closed, never given back to the pool inside a transaction.
                    if !connection.isClosed {
                        do {
                            try await connection.commandIfOpen("ROLLBACK", logger: logger)
                        } catch {
                            try? await connection.close()
                        }
                    }
                    throw error
                }
                do {
                    try await connection.commandIfOpen("COMMIT", logger: logger)
                } catch {
                    throw PostgresTransactionCommandError(command: "COMMIT", underlying: error)
                }
                return value
            }
        } catch {
            throw lost(error)
        }
    }

    /// Runs `closure` on a connection to the primary, in autocommit (as `PostgresClient.withConnection`).
    func withConnection<Result>(
        isolation: isolated (any Actor)? = #isolation,
        _ closure: (PostgresConnection) async throws -> sending Result
    ) async throws -> sending Result {
        let client = try await selection.primary()
        do {
            return try await client.withConnection(isolation: isolation, closure)
        } catch {
            throw lost(error)
        }
    }

    /// Marks the primary lost when `error` says so, and returns what the caller should see.
    private func lost(_ error: any Error) -> any Error {
        guard PostgresPrimarySelection.lostPrimary(error) else { return error }
        selection.markStale()
        return selection.unavailable(after: error)
    }
}

/// A transaction's `BEGIN` or `COMMIT` that failed (`PostgresPrimaryClient.withTransaction`): kept
/// apart from what the transaction's own statements threw, so that a failed COMMIT is never taken
/// for a statement the server could not prepare (which is sent again, unprepared).
struct PostgresTransactionCommandError: Error {
    /// `BEGIN` or `COMMIT`.
    let command: String
    /// What sending it threw.
    let underlying: any Error
}
