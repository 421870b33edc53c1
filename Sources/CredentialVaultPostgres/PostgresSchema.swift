import PostgresNIO

/// The three tables of a PostgreSQL vault (docs/FORMAT.md, "PostgreSQL tables"). Everything
/// but `store_name`, the vault id, the lookup hashes and the row generations is ciphertext.
enum PostgresSchema {
    /// An arbitrary, fixed advisory-lock key that serialises schema creation across clients.
    static let schemaLockKey: Int64 = 0x7661_756C_7400_0001

    static let createStores: PostgresQuery = """
        CREATE TABLE IF NOT EXISTS vault_stores (
            store_name text PRIMARY KEY,
            vault_id   bytea NOT NULL UNIQUE,
            key_slot   bytea NOT NULL,
            state      bytea NOT NULL
        )
        """

    /// The entry rows. The primary key carries `row_generation` (`INCLUDE`, PostgreSQL 11 and
    /// later): the read before a write of one entry, every (lookup, row generation) of a bucket,
    /// is then an index-only scan of one leaf page instead of one heap page per row (put at
    /// 100,000 entries went from 1.26× to 0.96× its time at 100, docs/BENCHMARKS.md). Tables made
    /// by earlier releases keep their key and work the same; docs/CLI.md moves them.
    static let createEntries: PostgresQuery = """
        CREATE TABLE IF NOT EXISTS vault_entries (
            vault_id       bytea  NOT NULL REFERENCES vault_stores (vault_id) ON DELETE CASCADE,
            lookup         bytea  NOT NULL,
            row_generation bigint NOT NULL,
            sealed         bytea  NOT NULL,
            PRIMARY KEY (vault_id, lookup) INCLUDE (row_generation)
        )
        """

    /// The bucket rows of version 3 stores: each bucket's generation and its entries' (lookup,
    /// row generation), sealed. Every bucket of a store has its row from the store's creation.
    static let createBuckets: PostgresQuery = """
        CREATE TABLE IF NOT EXISTS vault_buckets (
            vault_id bytea   NOT NULL REFERENCES vault_stores (vault_id) ON DELETE CASCADE,
            bucket   integer NOT NULL,
            sealed   bytea   NOT NULL,
            PRIMARY KEY (vault_id, bucket)
        ) WITH (fillfactor = 50)
        """

    /// The write of one entry to a version 3 store and its commit, in one round trip
    /// (`PostgresBucketWriteCall`): the bucket row saved only if it is still the one read
    /// (compare-and-set), then the entry upserted (or deleted, `entry_sealed` NULL), then COMMIT,
    /// inside the procedure, so that the answer (`saved`, the bucket rows saved: 1, or 0 when another
    /// writer changed the bucket and nothing was written) comes only once the commit is done.
    static let createWriteProcedure: PostgresQuery = """
        CREATE OR REPLACE PROCEDURE vault_bucket_write_v3(
            vault bytea, entry_lookup bytea, entry_generation bigint, entry_sealed bytea,
            bucket_number integer, bucket_sealed bytea, bucket_read bytea, INOUT saved bigint DEFAULT NULL)
        LANGUAGE plpgsql AS $procedure$
        BEGIN
            UPDATE vault_buckets SET sealed = bucket_sealed
            WHERE vault_id = vault AND bucket = bucket_number AND sealed = bucket_read;
            GET DIAGNOSTICS saved = ROW_COUNT;
            IF saved = 1 THEN
                IF entry_sealed IS NULL THEN
                    DELETE FROM vault_entries WHERE vault_id = vault AND lookup = entry_lookup;
                ELSE
                    INSERT INTO vault_entries (vault_id, lookup, row_generation, sealed)
                    VALUES (vault, entry_lookup, entry_generation, entry_sealed)
                    ON CONFLICT (vault_id, lookup) DO UPDATE SET row_generation = EXCLUDED.row_generation, sealed = EXCLUDED.sealed;
                END IF;
            END IF;
            COMMIT;
        END
        $procedure$
        """

    /// True when the write procedure found by the search path may be used: it is a procedure in the
    /// schema of `vault_buckets` (the one the search path finds) with the same owner. A
    /// `vault_bucket_write_v3` that another role made (a co-tenant able to create in `public`, or
    /// earlier on the search path) is never called: it would run with the vault role's rights.
    /// A scalar sub-select, false (or NULL) when either is missing.
    static let writeProcedureUsable = """
        (SELECT p.prokind = 'p' AND p.proowner = c.relowner AND p.pronamespace = c.relnamespace
         FROM pg_catalog.pg_class c
         JOIN pg_catalog.pg_proc p
           ON p.oid = pg_catalog.to_regprocedure('vault_bucket_write_v3(bytea,bytea,bigint,bytea,integer,bytea,bytea,bigint)')
         WHERE c.oid = pg_catalog.to_regclass('vault_buckets'))
        """

    /// Whether all three tables are there (the fast path: no schema lock), and whether the write procedure is.
    static let tablesPresent: PostgresQuery = """
        SELECT to_regclass('vault_stores') IS NOT NULL AND to_regclass('vault_entries') IS NOT NULL
               AND to_regclass('vault_buckets') IS NOT NULL,
               to_regprocedure('vault_bucket_write_v3(bytea,bytea,bigint,bytea,integer,bytea,bytea,bigint)') IS NOT NULL
        """
}
