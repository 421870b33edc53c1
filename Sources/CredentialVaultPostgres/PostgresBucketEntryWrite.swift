import NIOCore
import PostgresNIO

/// The second statement of a write of one entry to a version 3 store, prepared: the entry row
/// upserted and its bucket row (locked by `PostgresBucketLock`) saved, in one statement (a
/// data-modifying WITH, always run). Scalar binds, no arrays.
struct PostgresBucketEntryPut: PostgresPreparedStatement {
    static let name = "vault_bucket_put_v3"
    static let sql = """
        WITH written AS (
            INSERT INTO vault_entries (vault_id, lookup, row_generation, sealed) VALUES ($1, $2, $3, $4)
            ON CONFLICT (vault_id, lookup) DO UPDATE SET row_generation = EXCLUDED.row_generation, sealed = EXCLUDED.sealed
            RETURNING 1
        )
        UPDATE vault_buckets SET sealed = $6 WHERE vault_id = $1 AND bucket = $5
        """
    static let bindingDataTypes: [PostgresDataType] = [.bytea, .bytea, .int8, .bytea, .int4, .bytea]
    typealias Row = ()

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

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings()
        bindings.append(vaultID)
        bindings.append(lookup)
        bindings.append(rowGeneration)
        bindings.append(sealed)
        bindings.append(bucket)
        bindings.append(sealedBucket)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {}
}

/// As `PostgresBucketEntryPut`, for a removal: the entry row deleted and its bucket row saved, in one statement.
struct PostgresBucketEntryRemove: PostgresPreparedStatement {
    static let name = "vault_bucket_remove_v3"
    static let sql = """
        WITH removed AS (
            DELETE FROM vault_entries WHERE vault_id = $1 AND lookup = $2 RETURNING 1
        )
        UPDATE vault_buckets SET sealed = $4 WHERE vault_id = $1 AND bucket = $3
        """
    static let bindingDataTypes: [PostgresDataType] = [.bytea, .bytea, .int4, .bytea]
    typealias Row = ()

    /// The store's vault id.
    var vaultID: ByteBuffer
    /// The entry's lookup key.
    var lookup: ByteBuffer
    /// The entry's bucket.
    var bucket: Int32
    /// The bucket sealed at its new generation.
    var sealedBucket: ByteBuffer

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings()
        bindings.append(vaultID)
        bindings.append(lookup)
        bindings.append(bucket)
        bindings.append(sealedBucket)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {}
}
