import Logging
import PostgresNIO
import Synchronization

/// The rows of an unprepared query, taken on the connection's event loop as they arrive and asked
/// for again at once, rather than through `PostgresRowSequence`.
///
/// postgres-nio 1.33.2 stops the whole process (a precondition in
/// `RowStreamStateMachine.channelReadComplete`) when the server closes a connection after part of
/// a result has reached a `PostgresRowSequence` whose consumer has not yet asked for more: SwiftNIO
/// always signals a read complete at the end of the stream, and the row stream does not expect one
/// while it waits for the consumer. A result spread over several reads (a store's full read, a
/// bulk write's locking read) met an immediate shutdown, a server crash (every backend is stopped
/// with it) or a failover that way; the test suite crashed on it once. Rows taken here are asked for
/// before the event loop's next read, so that state never arises: the query fails instead (the
/// server is unavailable). Prepared statements have no such form in postgres-nio: the one-bucket
/// reads (`PostgresBucketLock`, `PostgresBucketSnapshot`, `PostgresBucketRead`) stay exposed when
/// their answer spans reads of the socket (a bucket of thousands of rows: a store made with few
/// bucket bits), as do the one-row answers an immediate shutdown cuts between their rows and
/// their end.
extension PostgresConnection {
    /// Every row `query` answers, decoded by `decode` on the event loop as it arrives.
    /// - Parameter progress: ticked every thousand rows (a long read's deadline then applies to
    ///   each thousand, not to all).
    /// - Throws: what `decode` throws first (postgres-nio then cancels the query and reports the
    ///   cancellation, which is not passed on), else what the query throws; `CancellationError`
    ///   when the calling task is cancelled (the rows still to come are not decoded).
    func eagerRows<Row: Sendable>(_ query: PostgresQuery, logger: Logger, progress: PostgresProgress? = nil,
                                  _ decode: @escaping @Sendable (PostgresRow) throws -> Row) async throws -> [Row] {
        let collected = EagerRowCollector<Row>()
        do {
            try await withTaskCancellationHandler {
                // Sent and given its row handler in one job of the event loop: were the handler
                // attached later, a fast answer's rows would wait for it without being asked for,
                // the state this avoids.
                _ = try await self.eventLoop.flatSubmit {
                    self.query(query, logger: logger) { row in
                        let count = try collected.append { try decode(row) }
                        if let progress, count % 1_000 == 0 { progress.tick() }
                    }
                }.get()
            } onCancel: {
                collected.cancel()
            }
        } catch {
            throw collected.firstError ?? error
        }
        return collected.rows
    }
}

/// The rows `eagerRows` has decoded so far (appended on the event loop, read after the query
/// ends), and the first error its decoding threw.
private final class EagerRowCollector<Row: Sendable>: Sendable {
    private struct State {
        var rows: [Row] = []
        var firstError: (any Error)?
        var cancelled = false
    }
    private let state = Mutex(State())

    /// Decodes one row and appends it; returns how many there are now. Rethrows (and keeps) the
    /// first error, and throws `CancellationError` once cancelled.
    func append(_ decode: () throws -> Row) throws -> Int {
        try state.withLock { state in
            if state.cancelled {
                let error = CancellationError()
                if state.firstError == nil { state.firstError = error }
                throw error
            }
            do {
                state.rows.append(try decode())
            } catch {
                if state.firstError == nil { state.firstError = error }
                throw error
            }
            return state.rows.count
        }
    }

    /// Stops decoding: the next row throws `CancellationError`.
    func cancel() { state.withLock { $0.cancelled = true } }

    /// Every row appended.
    var rows: [Row] { state.withLock { $0.rows } }

    /// The first error decoding threw (or the cancellation), if any.
    var firstError: (any Error)? { state.withLock { $0.firstError } }
}

extension PostgresPrimaryClient {
    /// `PostgresConnection.eagerRows` on a connection to the primary, in autocommit.
    func eagerRows<Row: Sendable>(_ query: PostgresQuery, logger: Logger, progress: PostgresProgress? = nil,
                                  _ decode: @escaping @Sendable (PostgresRow) throws -> Row) async throws -> [Row] {
        try await withConnection { connection in
            try await connection.eagerRows(query, logger: logger, progress: progress, decode)
        }
    }
}
