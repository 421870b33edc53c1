/// Entry history through the store: each call one snapshot or one durable write (see
/// `VaultTransaction`'s history methods for the rules).
extension SecretStore {
    /// How many earlier versions this vault keeps per entry.
    /// - Throws: the errors of `open`.
    public func historyLimit() throws -> Int {
        try snapshot { $0.historyLimit }
    }

    /// Sets how many earlier versions this vault keeps per entry (0 … `HistoryPolicy.maximumLimit`).
    /// - Throws: `.invalidInput`, `.busy`, and the errors of `open`.
    public func setHistoryLimit(_ limit: Int) throws {
        try update { try $0.setHistoryLimit(limit) }
    }

    /// How many earlier versions the vault keeps in all (of every entry, removed ones included).
    /// - Throws: the errors of `open`.
    public func keptVersionCount() throws -> Int {
        try snapshot { $0.keptVersionCount }
    }

    /// The versions of one entry, newest first (metadata only).
    /// - Throws: `.notFound`, `.invalidInput` for a file older than format version 3, and the errors of `open`.
    public func history(named name: String, owner: String = "") throws -> EntryHistory {
        try snapshot { try $0.history(named: name, owner: owner) }
    }

    /// Brings back a kept version of an entry as a new write.
    /// - Returns: the stored metadata.
    /// - Throws: `.notFound`, `.invalidInput`, `.tampered`, `.busy`, and the errors of `open`.
    @discardableResult
    public func restore(named name: String, owner: String = "", version: Int) throws -> EntryMetadata {
        try update { try $0.restore(named: name, owner: owner, version: version) }
    }
}
