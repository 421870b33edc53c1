import FoundationEssentials
import VaultCrypto

/// Entry history inside a transaction: a replaced or removed value goes to its entry's history
/// (docs/FORMAT.md, "History"), at most the vault's limit per entry, the oldest dropped first.
/// Only a version 3 file keeps history; tokens and the session's reserved entries never do
/// (`HistoryPolicy`).
extension VaultTransaction {
    /// How many earlier versions this vault keeps per entry.
    public var historyLimit: Int { image.history?.limit ?? HistoryPolicy.defaultLimit }

    /// How many earlier versions are kept in all (of every entry, removed ones included).
    public var keptVersionCount: Int { image.history?.records.reduce(0) { $0 + $1.versions.count } ?? 0 }

    /// Whether this vault file can keep history (format version 3).
    public var keepsHistory: Bool { image.majorVersion >= 3 }

    /// Sets how many earlier versions are kept per entry; versions beyond it are dropped now (0:
    /// every kept version and writer record goes, and no more are kept).
    /// - Throws: `.invalidInput` for a limit outside 0 … `HistoryPolicy.maximumLimit`, or a file
    ///   older than format version 3.
    public mutating func setHistoryLimit(_ limit: Int) throws {
        try requireHistoryFormat()
        guard (0...HistoryPolicy.maximumLimit).contains(limit) else {
            throw VaultError(.invalidInput, "a history limit must be between 0 and \(HistoryPolicy.maximumLimit), not \(limit)")
        }
        var section = image.history ?? HistorySection()
        guard section.limit != limit else { return }
        section.limit = limit
        section.records = limit == 0 ? [] : section.records.map { record in
            var record = record
            record.versions.removeFirst(max(0, record.versions.count - limit))
            return record
        }
        image.history = section
        changed = true
    }

    /// The versions of one entry, newest first: its current value (when it exists) and the kept
    /// earlier ones. Metadata only.
    /// - Throws: `.notFound` when the entry neither exists nor has kept versions; `.invalidInput`
    ///   for a file older than format version 3.
    public func history(named name: String, owner: String = "") throws -> EntryHistory {
        try requireHistoryFormat()
        let key = EntryKey(owner: owner, name: name)
        let record = image.history.flatMap { section in section.index(of: key).map { section.records[$0] } }
        let live = image.index(of: key).map { image.entries[$0] }
        guard live != nil || !(record?.versions.isEmpty ?? true) else { throw VaultError.entryNotFound(name) }
        var versions: [EntryVersion] = []
        if let live {
            versions.append(EntryVersion(version: Int(record?.lastVersion ?? 1),
                                         writtenAt: Date(millisecondsSince1970: live.updatedMilliseconds), replacedAt: nil,
                                         byteCount: live.ciphertext.count, writer: record?.lastWriter ?? "",
                                         kind: live.kind, isCurrent: true))
        }
        for kept in (record?.versions ?? []).reversed() {
            versions.append(EntryVersion(version: Int(kept.version), writtenAt: Date(millisecondsSince1970: kept.writtenMilliseconds),
                                         replacedAt: Date(millisecondsSince1970: kept.replacedMilliseconds),
                                         byteCount: kept.ciphertext.count, writer: kept.writer, kind: kept.kind, isCurrent: false))
        }
        return EntryHistory(name: name, owner: owner, limit: historyLimit, versions: versions)
    }

    /// Brings back a kept version as a new write of the entry (the current value, if any, goes to
    /// history like any replaced value). The entry's attributes are kept; kind, label, expiry and
    /// transferability are the version's.
    /// - Returns: the stored metadata.
    /// - Throws: `.notFound` for an unknown entry or version; `.invalidInput` for the current
    ///   version or a file older than format version 3; `.tampered` when the kept value does not verify.
    @discardableResult
    public mutating func restore(named name: String, owner: String = "", version: Int) throws -> EntryMetadata {
        try requireHistoryFormat()
        let key = EntryKey(owner: owner, name: name)
        guard let section = image.history, let position = section.index(of: key),
              let kept = section.records[position].versions.first(where: { Int($0.version) == version }) else {
            if image.index(of: key) != nil, let current = try? history(named: name, owner: owner).versions.first,
               current.version == version {
                throw VaultError(.invalidInput, "version \(version) of '\(TerminalText.escaped(name))' is its current value",
                                 fix: "choose an earlier version from the entry's history")
            }
            throw VaultError(.notFound, "'\(TerminalText.escaped(name))' has no kept version \(version)",
                             fix: "list the entry's kept versions first")
        }
        let secret = try kept.open(owner: owner, name: name, vaultID: image.vaultID, key: keys.history, path: path)
        let attributes = image.index(of: key).map { image.entries[$0].attributes } ?? [:]
        let entry = NewEntry(name: name, owner: owner, secret: secret, kind: kept.kind, label: kept.label,
                             expiresAt: kept.expiresMilliseconds.map { Date(millisecondsSince1970: $0) },
                             transferable: kept.transferable, attributes: attributes)
        let previousWriter = writer
        writer = .restore(version: version)
        defer { writer = previousWriter }
        return try put(entry, replace: true)
    }

    // MARK: Hooks of put, remove, move and removeAll

    /// Notes a write of `key`: `old` (the value leaving, if any) goes to history when kept, and
    /// the new value (of `newKind`; nil for a removal) gets the next version number and `writerTag`.
    mutating func noteWrite(of key: EntryKey, replacing old: SealedEntry?, with newKind: EntryKind?, writerTag: String? = nil) throws {
        guard image.majorVersion >= 3 else { return }
        var section = image.history ?? HistorySection()
        guard section.limit > 0 else { return }
        let position = section.index(of: key)
        var record = position.map { section.records[$0] }
            ?? HistoryRecord(owner: key.owner, name: key.name, lastVersion: old == nil ? 0 : 1, lastWriter: "", versions: [])
        if let old, HistoryPolicy.keepsHistory(name: key.name, owner: key.owner, kind: old.kind) {
            let secret = try old.open(vaultID: image.vaultID, key: keys.value, path: path)
            record.versions.append(try SealedVersion.seal(secret, of: old, version: record.lastVersion, writer: record.lastWriter,
                                                          replacedMilliseconds: now.millisecondsSince1970,
                                                          vaultID: image.vaultID, key: keys.history))
            record.versions.removeFirst(max(0, record.versions.count - section.limit))
        }
        let tracksNew = newKind.map { HistoryPolicy.keepsHistory(name: key.name, owner: key.owner, kind: $0) } ?? false
        if newKind != nil {
            record.lastVersion = record.lastVersion &+ 1
            record.lastWriter = tracksNew ? EntryWriter(tag: writerTag ?? writer.tag).tag : ""
        }
        let keep = !record.versions.isEmpty || tracksNew
        switch (position, keep) {
        case let (position?, true): section.records[position] = record
        case let (position?, false): section.records.remove(at: position)
        case (nil, true): section.records.insert(record, at: section.insertionIndex(of: key))
        case (nil, false): return
        }
        image.history = section
    }

    /// The writer recorded for the current value of `key` ("" when none).
    func recordedWriter(of key: EntryKey) -> String? {
        image.history.flatMap { section in section.index(of: key).map { section.records[$0].lastWriter } }
    }

    /// Drops the history of one entry key (its value moved elsewhere, nothing was replaced).
    mutating func forgetHistory(of key: EntryKey) {
        guard var section = image.history, let position = section.index(of: key) else { return }
        section.records.remove(at: position)
        image.history = section
        changed = true
    }

    /// Drops the history of every entry of `owner` (a namespace removed as a whole: sign-out,
    /// a guest's items after a sign-in), so nothing of it outlives the removal.
    public mutating func forgetHistory(owner: String) {
        guard var section = image.history else { return }
        let before = section.records.count
        section.records.removeAll { $0.owner.sameBytes(as: owner) }
        guard section.records.count != before else { return }
        image.history = section
        changed = true
    }

    private func requireHistoryFormat() throws {
        guard image.majorVersion >= 3 else {
            throw VaultError(.invalidInput,
                             "this vault file is format version \(max(image.majorVersion, 2)), kept so that older releases can still read it; entry history needs format version 3",
                             path: path, fix: "upgrade the vault file to the newest format first", topic: .historyNeedsNewerFormat)
        }
    }
}
