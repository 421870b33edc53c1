/// The decoded contents of a vault file: header fields and sealed entries in index order.
struct VaultImage: Sendable {
    /// The major version of the file this was read from (a write keeps it, except that v1 becomes v2; see `VaultFileCodec.encode`).
    var majorVersion: UInt8
    var minorVersion: UInt8
    var vaultID: [UInt8]
    var slot: KeySlot
    var generation: UInt64
    /// Strictly ascending by `EntryKey`.
    var entries: [SealedEntry]
    /// The key of this vault's rollback record, fixed for the vault's life from its first v2
    /// write on (nil when read from a v1 file: the next write makes one).
    var stateKey: [UInt8]?
    /// v3: the entries' earlier values and the vault's history limit (nil: the default limit, nothing kept yet).
    var history: HistorySection? = nil

    /// Binary search for an entry.
    func index(of key: EntryKey) -> Int? { entries.position(of: key) }

    /// Where `key` is or would be inserted.
    func insertionIndex(of key: EntryKey) -> Int { entries.insertionPosition(of: key) }
}
