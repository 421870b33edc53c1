import NIOCore
import PostgresNIO

/// The one query of `entry(named:)` for a version 3 store: whether the server is a standby, the
/// entry's bucket row and the entry row, in one prepared statement (one snapshot, one round trip).
/// No bucket row at all is tampering (every bucket has its row from the store's creation).
struct PostgresBucketRead: PostgresPreparedStatement {
    static let name = "vault_bucket_read_v3"
    static let sql = """
        SELECT pg_catalog.pg_is_in_recovery(), b.sealed, e.row_generation, e.sealed
        FROM vault_buckets b LEFT JOIN vault_entries e ON e.vault_id = b.vault_id AND e.lookup = $2
        WHERE b.vault_id = $1 AND b.bucket = $3
        """
    static let bindingDataTypes: [PostgresDataType] = [.bytea, .bytea, .int4]

    /// In recovery (a standby), the bucket row, and the entry's generation and sealed bytes (NULL when none).
    typealias Row = (Bool, ByteBuffer, Int64?, ByteBuffer?)

    /// The store's vault id.
    var vaultID: ByteBuffer
    /// The entry's lookup key.
    var lookup: ByteBuffer
    /// The entry's bucket.
    var bucket: Int32

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings()
        bindings.append(vaultID)
        bindings.append(lookup)
        bindings.append(bucket)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {
        try row.decode(Row.self)
    }

    /// The decoded answer, refusing one from a standby: a hot standby may lag its primary, and a
    /// row it serves could be older than the current one while every check passes (its bucket row
    /// lags with it). Reads go to the primary only.
    /// - Throws: `PostgresStandbyAnswer` for a server in recovery.
    static func checked(_ row: Row, configuration: PostgresStoreConfiguration) throws
        -> (bucket: [UInt8], rowGeneration: Int64?, sealed: [UInt8]?) {
        try refuseStandby(inRecovery: row.0, configuration: configuration)
        return (Array(buffer: row.1), row.2, row.3.map { Array(buffer: $0) })
    }

    /// Throws `PostgresStandbyAnswer` when the server that answered is a standby
    /// (`pg_is_in_recovery()` true): the primary selection re-probes on it, and a caller that
    /// still meets it sees `.serverUnavailable`, never the standby's rows.
    static func refuseStandby(inRecovery: Bool, configuration: PostgresStoreConfiguration) throws {
        guard inRecovery else { return }
        throw PostgresStandbyAnswer()
    }
}
