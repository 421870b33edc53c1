import NIOCore
import PostgresNIO

/// The first statement of a write of one entry to a version 3 store outside a transaction,
/// prepared: `PostgresBucketLock` without the lock. It reads the bucket row with the (lookup, row
/// generation) of every entry row in the bucket's range, and the sealed bytes of the one row the
/// put may replace, all from one snapshot, so the rows match the bucket row unless tampered with.
/// The write that follows (`PostgresBucketEntryPut` or `Remove`) saves the bucket only if it is
/// still the row read here (docs/FORMAT.md, "Writing, version 3").
struct PostgresBucketSnapshot: PostgresPreparedStatement {
    static let name = "vault_bucket_snapshot_v3"
    static let sql = """
        SELECT b.sealed, NULL::bytea, NULL::bigint, NULL::bytea FROM vault_buckets b WHERE b.vault_id = $1 AND b.bucket = $2
        UNION ALL
        SELECT NULL::bytea, e.lookup, e.row_generation, CASE WHEN e.lookup = $5 THEN e.sealed END
        FROM vault_entries e WHERE e.vault_id = $1 AND e.lookup >= $3 AND e.lookup < $4
        """
    static let bindingDataTypes = PostgresBucketLock.bindingDataTypes
    /// As `PostgresBucketLock.Row`.
    typealias Row = PostgresBucketLock.Row

    /// The same binds as the locking statement's.
    var read: PostgresBucketLock

    func makeBindings() throws -> PostgresBindings {
        try read.makeBindings()
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {
        try read.decodeRow(row)
    }
}
