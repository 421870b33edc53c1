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

    static let createEntries: PostgresQuery = """
        CREATE TABLE IF NOT EXISTS vault_entries (
            vault_id       bytea  NOT NULL REFERENCES vault_stores (vault_id) ON DELETE CASCADE,
            lookup         bytea  NOT NULL,
            row_generation bigint NOT NULL,
            sealed         bytea  NOT NULL,
            PRIMARY KEY (vault_id, lookup)
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
        )
        """

    /// True when all three tables are there (the fast path: no schema lock).
    static let tablesPresent: PostgresQuery = """
        SELECT to_regclass('vault_stores') IS NOT NULL AND to_regclass('vault_entries') IS NOT NULL
               AND to_regclass('vault_buckets') IS NOT NULL
        """
}
