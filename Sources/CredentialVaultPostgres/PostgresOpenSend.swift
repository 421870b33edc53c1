import Logging
import NIOCore
import PostgresNIO

/// Statements sent only on a connection that is still open, decided on its event loop.
///
/// postgres-nio 1.33.2 writes each statement to its channel without a promise
/// (`channel.write(task, promise: nil)`). Once the server has closed the connection and SwiftNIO
/// has taken its handlers out of the pipeline (a job of the event loop after the close), such a
/// write fails unseen and the statement's own promise is never completed: the call waits forever.
/// That happens to the statement a store sends after the server closed a connection it holds: the
/// check that a write in autocommit was committed (postgres-nio closes the connection on the error
/// of a failed commit), a transaction's `ROLLBACK` after a server crash or a failover, the next
/// statement of a transaction whose server stopped between two statements. The store's deadline
/// answers the caller, but the operation's task stays suspended, holding its store, until the
/// process exits.
///
/// Here the check and the write run in one job of the connection's event loop (the call starts on
/// an executor that runs on that loop, so postgres-nio's write is made synchronously): an open
/// connection still has its handler, which answers or fails every statement written to it; a
/// closed one fails at once with `PostgresConnectionClosed` (the server is unavailable).
extension PostgresConnection {
    /// Runs `send` (a postgres-nio call that writes a statement and waits for the start of its
    /// answer, and may then read its rows) on this connection's event loop, if the connection is
    /// open there.
    /// - Throws: `PostgresConnectionClosed` when it is closed; else what `send` throws.
    func sendingIfOpen<Result>(_ send: () async throws -> Result) async throws -> Result {
        try await withTaskExecutorPreference(EventLoopSendExecutor(eventLoop)) {
            // The closure runs on the preferred executor because it is a plain nonisolated async
            // closure: checked in debug builds (the tests). postgres-nio's call writes before its
            // first suspension (1.33.2: PostgresConnection.swift's `query` and prepared `execute`
            // write, then await): read it again on an upgrade, as either changing would bring the
            // lost statement back unseen.
            eventLoop.assertInEventLoop()
            guard !isClosed else { throw PostgresConnectionClosed() }
            return try await send()
        }
    }

    /// `query(_:logger:)`, sent only if this connection is open (`sendingIfOpen`).
    @discardableResult
    func queryIfOpen(_ query: PostgresQuery, logger: Logger) async throws -> PostgresRowSequence {
        try await sendingIfOpen { try await self.query(query, logger: logger) }
    }

    /// `execute(_:logger:)` of a prepared statement, sent only if this connection is open (`sendingIfOpen`).
    func executeIfOpen<Statement: PostgresPreparedStatement, Row>(
        _ statement: Statement, logger: Logger
    ) async throws -> AsyncThrowingMapSequence<PostgresRowSequence, Row> where Row == Statement.Row {
        try await sendingIfOpen { try await self.execute(statement, logger: logger) }
    }

    /// A statement without rows to read (`BEGIN`, `COMMIT`, `ROLLBACK`, `SELECT 1`), sent only if
    /// this connection is open (`sendingIfOpen`), its answer waited for.
    func commandIfOpen(_ query: PostgresQuery, logger: Logger) async throws {
        for try await _ in try await queryIfOpen(query, logger: logger) {}
    }
}

/// The error of a statement not sent because the server had already closed its connection.
struct PostgresConnectionClosed: Error, CustomStringConvertible {
    var description: String { "the server closed the connection" }
}

/// A task executor whose jobs run on one SwiftNIO event loop (a loop of postgres-nio's own group,
/// which is never shut down while the process runs: a shut-down loop drops the jobs given to it).
private final class EventLoopSendExecutor: TaskExecutor {
    private let eventLoop: any EventLoop

    init(_ eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        eventLoop.execute {
            job.runSynchronously(on: self.asUnownedTaskExecutor())
        }
    }
}
