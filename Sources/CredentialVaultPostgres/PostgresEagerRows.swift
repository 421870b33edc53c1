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
/// server is unavailable). Prepared statements have no such form in postgres-nio; theirs are
/// one-row answers that arrive whole.
extension PostgresConnection {
    /// Every row `query` answers, decoded by `decode` on the event loop as it arrives.
    /// - Parameter progress: ticked every thousand rows (a long read's deadline then applies to
    ///   each thousand, not to all).
    /// - Throws: what the query or `decode` throws (the query is cancelled then).
    func eagerRows<Row: Sendable>(_ query: PostgresQuery, logger: Logger, progress: PostgresProgress? = nil,
                                  _ decode: @escaping @Sendable (PostgresRow) throws -> Row) async throws -> [Row] {
        let collected = EagerRowCollector<Row>()
        _ = try await self.query(query, logger: logger) { row in
            let count = collected.append(try decode(row))
            if let progress, count % 1_000 == 0 { progress.tick() }
        }.get()
        return collected.rows
    }
}

/// The rows `eagerRows` has decoded so far (appended on the event loop, read after the query ends).
private final class EagerRowCollector<Row: Sendable>: Sendable {
    private let collected = Mutex<[Row]>([])

    /// Appends `row`; returns how many there are now.
    func append(_ row: Row) -> Int {
        collected.withLock { rows in
            rows.append(row)
            return rows.count
        }
    }

    /// Every row appended.
    var rows: [Row] { collected.withLock { $0 } }
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
