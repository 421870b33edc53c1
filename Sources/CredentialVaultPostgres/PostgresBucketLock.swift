import NIOCore
import PostgresNIO

/// The first statement of a write of one entry to a version 3 store, prepared: it locks the
/// entry's bucket row (`FOR UPDATE`) and reads it with the (lookup, row generation) of every entry
/// row in the bucket's lookup range, and the sealed bytes of the one row the put may replace
/// (docs/FORMAT.md, "Writing, version 3"). Scalar binds, no arrays: each pooled connection plans it once.
///
/// The entry rows come from the statement's snapshot: when it waited for the lock, they may be
/// older than the bucket row (which `FOR UPDATE` returns as the latest); the writer then reads them again.
/// The range's bounds are sub-selects so that the prepared statement keeps its generic plan
/// (`PostgresBucketSnapshot` says why), and the sealed bytes come from a sub-select of their own,
/// so that the range is an index-only scan (`PostgresBucketSnapshot` again).
struct PostgresBucketLock: PostgresPreparedStatement {
    static let name = "vault_bucket_lock_v3"
    static let sql = """
        WITH locked AS (
            SELECT sealed FROM vault_buckets WHERE vault_id = $1 AND bucket = $2 FOR UPDATE
        )
        SELECT l.sealed, NULL::bytea, NULL::bigint, NULL::bytea FROM locked l
        UNION ALL
        SELECT NULL::bytea, e.lookup, e.row_generation, CASE WHEN e.lookup = $5 THEN (SELECT r.sealed FROM vault_entries r WHERE r.vault_id = $1 AND r.lookup = $5 LIMIT 1) END
        FROM vault_entries e WHERE e.vault_id = $1 AND e.lookup >= (SELECT $3::bytea) AND e.lookup < (SELECT $4::bytea)
        """
    static let bindingDataTypes: [PostgresDataType] = [.bytea, .int4, .bytea, .bytea, .bytea]

    /// The bucket row (its one row), or an entry row: lookup, row generation, sealed bytes (only the wanted one's).
    typealias Row = (ByteBuffer?, ByteBuffer?, Int64?, ByteBuffer?)

    /// The store's vault id.
    var vaultID: ByteBuffer
    /// The bucket to lock.
    var bucket: Int32
    /// The lowest lookup of the bucket.
    var low: ByteBuffer
    /// Above every lookup of the bucket.
    var high: ByteBuffer
    /// The lookup whose sealed bytes are wanted (nil: none).
    var sealedOf: ByteBuffer?

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings()
        bindings.append(vaultID)
        bindings.append(bucket)
        bindings.append(low)
        bindings.append(high)
        if let sealedOf { bindings.append(sealedOf) } else { bindings.appendNull() }
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {
        try row.decode(Row.self)
    }
}
