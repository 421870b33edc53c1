import NIOCore
import PostgresNIO

/// The one query of `entry(named:)`: the entry row joined with its store's state row, the state
/// itself left out (NULL) when the state row's `xmin` is the one the store last opened.
///
/// A prepared statement: each pooled connection parses and plans it once, then only binds and
/// executes it. The join is planned on every call otherwise, which under 32 concurrent readers
/// on two cores cost more than the row fetch itself (docs/BENCHMARKS.md).
struct PostgresEntryRead: PostgresPreparedStatement {
    static let name = "vault_entry_read_v1"
    static let sql = """
        SELECT CASE WHEN s.xmin::text = $3 THEN NULL ELSE s.state END, s.xmin::text, e.row_generation, e.sealed
        FROM vault_stores s LEFT JOIN vault_entries e ON e.vault_id = s.vault_id AND e.lookup = $2
        WHERE s.vault_id = $1
        """
    static let bindingDataTypes: [PostgresDataType] = [.bytea, .bytea, .text]

    /// The state (NULL when unchanged), the state row's `xmin`, and the entry's generation and
    /// sealed bytes (both NULL when there is no such entry).
    typealias Row = (ByteBuffer?, String, Int64?, ByteBuffer?)

    /// The store's vault id.
    var vaultID: ByteBuffer
    /// The entry's lookup key (the keyed hash of owner and name).
    var lookup: ByteBuffer
    /// The `xmin` of the state row the store holds open ("" for none).
    var knownVersion: String

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings()
        bindings.append(vaultID)
        bindings.append(lookup)
        bindings.append(knownVersion)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {
        try row.decode(Row.self)
    }

    /// True for an error the server sent (not a lost connection or a timeout).
    static func isServerError(_ error: any Error) -> Bool {
        (error as? PSQLError)?.code == .server
    }

    /// True for the errors of a server or pooler that cannot keep a named statement on the
    /// connection (PgBouncer in transaction mode with `max_prepared_statements` 0, its default
    /// before 1.24): the statement is missing (SQLSTATE 26000) or already there (42P05). The
    /// store then reads without preparing.
    static func isUnsupported(_ error: any Error) -> Bool {
        guard let error = error as? PSQLError, error.code == .server,
              let state = error.serverInfo?[.sqlState] else { return false }
        return state == "26000" || state == "42P05"
    }
}
