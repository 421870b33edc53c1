import NIOCore
import PostgresNIO

/// The second statement of a write of one entry to a version 3 store, prepared: its bucket row
/// saved **only if it is still the one read** (`sealed = $7`, a compare-and-set), and then the
/// entry row upserted, in one statement (data-modifying WITHs). It answers one row: the number of
/// bucket rows saved, 1, or 0 when another writer changed the bucket since it was read (nothing
/// written; a data-modifying WITH runs to its end whether or not its rows are read). Scalar binds, no arrays.
///
/// A write of one entry sends it in autocommit after `PostgresBucketSnapshot` (two round trips);
/// a transaction sends it after `PostgresBucketLock`, when the bucket cannot have changed.
struct PostgresBucketEntryPut: PostgresPreparedStatement {
    static let name = "vault_bucket_put_v3_cas"
    static let sql = """
        WITH saved AS (
            UPDATE vault_buckets SET sealed = $6 WHERE vault_id = $1 AND bucket = $5 AND sealed = $7 RETURNING 1
        ), written AS (
            INSERT INTO vault_entries (vault_id, lookup, row_generation, sealed) SELECT $1, $2, $3, $4 FROM saved
            ON CONFLICT (vault_id, lookup) DO UPDATE SET row_generation = EXCLUDED.row_generation, sealed = EXCLUDED.sealed
            RETURNING 1
        )
        SELECT count(*) FROM saved
        """
    static let bindingDataTypes: [PostgresDataType] = [.bytea, .bytea, .int8, .bytea, .int4, .bytea, .bytea]
    /// The number of bucket rows saved: 1, or 0 when the bucket changed since it was read.
    typealias Row = Int64

    /// The store's vault id.
    var vaultID: ByteBuffer
    /// The entry's lookup key.
    var lookup: ByteBuffer
    /// The entry row's generation (its bucket's new generation).
    var rowGeneration: Int64
    /// The sealed entry.
    var sealed: ByteBuffer
    /// The entry's bucket.
    var bucket: Int32
    /// The bucket sealed at its new generation.
    var sealedBucket: ByteBuffer
    /// The bucket row as it was read: saved over only if it is still this.
    var previousBucket: ByteBuffer

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings()
        bindings.append(vaultID)
        bindings.append(lookup)
        bindings.append(rowGeneration)
        bindings.append(sealed)
        bindings.append(bucket)
        bindings.append(sealedBucket)
        bindings.append(previousBucket)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {
        try row.decode(Row.self)
    }
}

/// As `PostgresBucketEntryPut`, for a removal: the bucket row saved if it is still the one read,
/// and then the entry row deleted, in one statement; it answers the number of bucket rows saved.
struct PostgresBucketEntryRemove: PostgresPreparedStatement {
    static let name = "vault_bucket_remove_v3_cas"
    static let sql = """
        WITH saved AS (
            UPDATE vault_buckets SET sealed = $4 WHERE vault_id = $1 AND bucket = $3 AND sealed = $5 RETURNING 1
        ), removed AS (
            DELETE FROM vault_entries WHERE vault_id = $1 AND lookup = $2 AND EXISTS (SELECT 1 FROM saved) RETURNING 1
        )
        SELECT count(*) FROM saved
        """
    static let bindingDataTypes: [PostgresDataType] = [.bytea, .bytea, .int4, .bytea, .bytea]
    /// The number of bucket rows saved: 1, or 0 when the bucket changed since it was read.
    typealias Row = Int64

    /// The store's vault id.
    var vaultID: ByteBuffer
    /// The entry's lookup key.
    var lookup: ByteBuffer
    /// The entry's bucket.
    var bucket: Int32
    /// The bucket sealed at its new generation.
    var sealedBucket: ByteBuffer
    /// The bucket row as it was read: saved over only if it is still this.
    var previousBucket: ByteBuffer

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings()
        bindings.append(vaultID)
        bindings.append(lookup)
        bindings.append(bucket)
        bindings.append(sealedBucket)
        bindings.append(previousBucket)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {
        try row.decode(Row.self)
    }
}
