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
struct PostgresBucketEntryPut: PostgresBucketWriteStatement {
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
    static let bindsEntry = true
    /// What is written.
    var write: PostgresBucketWrite
}

/// As `PostgresBucketEntryPut`, for a removal: the bucket row saved if it is still the one read,
/// and then the entry row deleted, in one statement; it answers the number of bucket rows saved.
struct PostgresBucketEntryRemove: PostgresBucketWriteStatement {
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
    static let bindsEntry = false
    /// What is written (`sealed` and `rowGeneration` unused).
    var write: PostgresBucketWrite
}

/// A statement that writes one entry and its bucket row if the bucket row is still the one read,
/// answering one number: the bucket rows saved (1, or 0 when the bucket changed since it was read).
protocol PostgresBucketWriteStatement: PostgresPreparedStatement where Row == Int64 {
    /// Whether the entry's generation and sealed bytes are bound (not for a removal).
    static var bindsEntry: Bool { get }
    /// What is written.
    var write: PostgresBucketWrite { get }
}

extension PostgresBucketWriteStatement {
    func makeBindings() throws -> PostgresBindings {
        write.bindings(withEntry: Self.bindsEntry)
    }

    func decodeRow(_ row: PostgresRow) throws -> Int64 {
        try row.decode(Int64.self)
    }
}

/// The values of a write of one entry and its bucket row, bound in this order by
/// `PostgresBucketEntryPut` and `PostgresBucketWriteCall` (`PostgresBucketEntryRemove` leaves out
/// the entry's generation and sealed bytes).
struct PostgresBucketWrite {
    /// The store's vault id.
    var vaultID: ByteBuffer
    /// The entry's lookup key.
    var lookup: ByteBuffer
    /// The entry row's generation (its bucket's new generation); unused for a removal.
    var rowGeneration: Int64
    /// The sealed entry, or nil to remove it.
    var sealed: ByteBuffer?
    /// The entry's bucket.
    var bucket: Int32
    /// The bucket sealed at its new generation.
    var sealedBucket: ByteBuffer
    /// The bucket row as it was read: saved over only if it is still this.
    var previousBucket: ByteBuffer

    /// The binds: vault id, lookup, (row generation, sealed entry or NULL,) bucket, new bucket, bucket as read.
    func bindings(withEntry: Bool) -> PostgresBindings {
        var bindings = PostgresBindings()
        bindings.append(vaultID)
        bindings.append(lookup)
        if withEntry {
            bindings.append(rowGeneration)
            if let sealed { bindings.append(sealed) } else { bindings.appendNull() }
        }
        bindings.append(bucket)
        bindings.append(sealedBucket)
        bindings.append(previousBucket)
        return bindings
    }
}
