/// How a PostgreSQL store keeps its generations (docs/FORMAT.md, "PostgreSQL tables").
enum PostgresStoreLayout: Sendable, Equatable {
    /// Versions 1 and 2: one sealed state row lists every entry; every write locks and rewrites it.
    case single
    /// Version 3: 2^bits bucket rows, each listing its own entries; a write locks only its buckets.
    case buckets(bits: UInt8)
}

/// What a committed write transaction advanced: the single state (versions 1 and 2) or the
/// generation of each bucket it wrote (version 3). Recorded only once the transaction committed.
enum PostgresCommitted: Sendable {
    case state(PostgresVaultState)
    case buckets([UInt32: UInt64])
}
