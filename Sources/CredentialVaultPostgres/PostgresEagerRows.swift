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
        // Sent and given its row handler in one job of the event loop: were the handler attached
        // later, a fast answer's rows would wait for it without being asked for, the state this avoids.
        // Only on an open connection (`PostgresOpenSend`): a statement written to a closed one waits forever.
        let answered = self.eventLoop.flatSubmit { () -> EventLoopFuture<PostgresQueryMetadata> in
            guard !self.isClosed else { return self.eventLoop.makeFailedFuture(PostgresConnectionClosed()) }
            return self.query(query, logger: logger) { row in
                let count = try collected.append { try decode(row) }
                if let progress, count % 1_000 == 0 { progress.tick() }
            }
        }
        let waiter = EagerRowWaiter()
        do {
            // A cancelled caller is answered at once (as a row sequence's was), not when the
            // server answers: on a cut link that is minutes, and the task would outlive its store.
            try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                    waiter.wait(continuation)
                    answered.whenComplete { result in waiter.finish(result.map { _ in () }) }
                }
            } onCancel: {
                collected.cancel()
                waiter.finish(.failure(CancellationError()))
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

/// The continuation `eagerRows` waits on, resumed once: by the query's end or by the caller's
/// cancellation, whichever comes first (either may come before the wait begins).
private final class EagerRowWaiter: Sendable {
    private struct State {
        var continuation: CheckedContinuation<Void, any Error>?
        var early: Result<Void, any Error>?
        var finished = false
    }
    private let state = Mutex(State())

    /// Waits on `continuation`, or resumes it at once if the wait already ended.
    func wait(_ continuation: CheckedContinuation<Void, any Error>) {
        let early = state.withLock { state -> Result<Void, any Error>? in
            if state.finished { return state.early ?? .failure(CancellationError()) }
            state.continuation = continuation
            return nil
        }
        if let early { continuation.resume(with: early) }
    }

    /// Ends the wait with `result` (the first call only).
    func finish(_ result: Result<Void, any Error>) {
        let continuation = state.withLock { state -> CheckedContinuation<Void, any Error>? in
            guard !state.finished else { return nil }
            state.finished = true
            guard let continuation = state.continuation else {
                state.early = result
                return nil
            }
            state.continuation = nil
            return continuation
        }
        continuation?.resume(with: result)
    }
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
