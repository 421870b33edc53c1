import NIOCore
import PostgresNIO

/// The first statement of a write of one entry to a version 3 store outside a transaction,
/// prepared: `PostgresBucketLock` without the lock, and with `pg_is_in_recovery()` as every
/// unlocked read has it (a standby refuses a lock, not a read). It reads the bucket row with the (lookup, row
/// generation) of every entry row in the bucket's range, and the sealed bytes of the one row the
/// put may replace, all from one snapshot, so the rows match the bucket row unless tampered with.
/// The write that follows (`PostgresBucketEntryPut` or `Remove`) saves the bucket only if it is
/// still the row read here (docs/FORMAT.md, "Writing, version 3").
///
/// The range's bounds are sub-selects, as in `PostgresBucketLock`: PostgreSQL then estimates the
/// range the same way with and without the bound values, so it keeps the generic plan of a
/// prepared statement. With the bounds as plain parameters, a store that is most of its table
/// (one vault of 100,000 entries) estimates the generic plan at 500 rows and the custom one at 6,
/// and plans every execution anew: 8 % of the machine's CPU in a 32-client put benchmark.
///
/// The range reads only columns of the primary key's index (`row_generation` is included in it,
/// `PostgresSchema.createEntries`), so it is an index-only scan; the replaced row's sealed bytes
/// come from a sub-select run only for that row (`LIMIT 1`: with the key dropped and a row doubled,
/// the range returns the lookup twice and the store refuses it as tampered, rather than the server
/// failing the statement).
struct PostgresBucketSnapshot: PostgresPreparedStatement {
    static let name = "vault_bucket_snapshot_v3"
    static let sql = """
        SELECT pg_catalog.pg_is_in_recovery(), NULL::bytea, NULL::bytea, NULL::bigint, NULL::bytea
        UNION ALL
        SELECT NULL::boolean, b.sealed, NULL::bytea, NULL::bigint, NULL::bytea FROM vault_buckets b WHERE b.vault_id = $1 AND b.bucket = $2
        UNION ALL
        SELECT NULL::boolean, NULL::bytea, e.lookup, e.row_generation, CASE WHEN e.lookup = $5 THEN (SELECT r.sealed FROM vault_entries r WHERE r.vault_id = $1 AND r.lookup = $5 LIMIT 1) END
        FROM vault_entries e WHERE e.vault_id = $1 AND e.lookup >= (SELECT $3::bytea) AND e.lookup < (SELECT $4::bytea)
        """
    static let bindingDataTypes = PostgresBucketLock.bindingDataTypes
    /// As `PostgresBucketLock.Row`; the row of `pg_is_in_recovery()` (false) decodes as all nil.
    typealias Row = PostgresBucketLock.Row

    /// The same binds as the locking statement's.
    var read: PostgresBucketLock

    func makeBindings() throws -> PostgresBindings {
        try read.makeBindings()
    }

    /// - Throws: `PostgresStandbyAnswer` for the answer of a server in recovery (a hot standby,
    ///   such as an old primary after a switchover): a write never decides from a standby's rows.
    func decodeRow(_ row: PostgresRow) throws -> Row {
        let (inRecovery, bucket, lookup, generation, sealed) = try row.decode((Bool?, ByteBuffer?, ByteBuffer?, Int64?, ByteBuffer?).self)
        if inRecovery == true { throw PostgresStandbyAnswer() }
        return (bucket, lookup, generation, sealed)
    }
}
