import FoundationEssentials
import VaultCrypto

/// A set of changes applied to the vault as one durable write.
///
/// Handed to the closure of `SecretStore.update(_:)`, which holds the vault lock
/// for its whole duration; either every change lands or none does.
public struct VaultTransaction: ~Copyable {
    var image: VaultImage
    let keys: DataKeys
    let now: Date
    let path: String?
    /// Who writes in this transaction: kept with each value it writes, for the entry's history.
    public var writer: EntryWriter = .unspecified
    internal(set) var changed = false
    private(set) var rotationRequested = false

    init(image: VaultImage, keys: DataKeys, now: Date, path: String?) {
        self.image = image
        self.keys = keys
        self.now = now
        self.path = path
    }

    /// Metadata of every entry, or of one owner's entries, in name order.
    public func list(owner: String? = nil) -> [EntryMetadata] {
        image.entries.lazy.filter { owner == nil || $0.owner.sameBytes(as: owner ?? "") }.map(\.metadata)
    }

    /// Metadata of one entry, or nil.
    public func metadata(named name: String, owner: String = "") -> EntryMetadata? {
        image.index(of: EntryKey(owner: owner, name: name)).map { image.entries[$0].metadata }
    }

    /// One entry's secret.
    /// - Throws: `.notFound`, `.tampered`.
    public func secret(named name: String, owner: String = "") throws -> SecureBytes {
        guard let position = image.index(of: EntryKey(owner: owner, name: name)) else { throw VaultError.entryNotFound(name) }
        return try image.entries[position].open(vaultID: image.vaultID, key: keys.value, path: path)
    }

    /// Adds an entry, or replaces it when `replace` is true (keeping its creation date).
    /// - Returns: The stored metadata.
    /// - Throws: `.alreadyExists` without `replace`; `.invalidInput` for names, labels or secrets over the caps.
    @discardableResult
    public mutating func put(_ entry: NewEntry, replace: Bool = false) throws -> EntryMetadata {
        try EntryValidation.checkName(entry.name)
        try EntryValidation.checkOwner(entry.owner)
        try EntryValidation.checkLabel(entry.label)
        try EntryValidation.checkAttributes(entry.attributes)
        try EntryValidation.checkSecret(byteCount: entry.secret.count)
        if !entry.attributes.isEmpty, image.majorVersion < VaultFileLayout.currentMajorVersion {
            throw VaultError(.invalidInput,
                             "this vault file is format version \(max(image.majorVersion, 2)), kept so that older releases can still read it; entry attributes need format version \(VaultFileLayout.currentMajorVersion)",
                             path: path, fix: "upgrade the vault file to the newest format first, or store the entry without attributes",
                             topic: .attributesNeedNewerFormat)
        }
        if entry.kind.isNewerThanOriginalKinds, image.majorVersion < VaultFileLayout.currentMajorVersion {
            throw VaultError(.invalidInput,
                             "this vault file is format version \(max(image.majorVersion, 2)), kept so that older releases can still read it; entries of kind \(entry.kind) need format version \(VaultFileLayout.currentMajorVersion)",
                             path: path, fix: "upgrade the vault file to the newest format first",
                             topic: .kindNeedsNewerFormat)
        }
        let key = EntryKey(owner: entry.owner, name: entry.name)
        let existing = image.index(of: key)
        if existing != nil, !replace { throw VaultError.entryExists(entry.name) }
        if existing == nil, image.entries.count >= VaultLimits.maximumEntries {
            throw VaultError(.invalidInput, "the vault holds the maximum of \(VaultLimits.maximumEntries) entries",
                             fix: "remove entries you no longer need")
        }
        let sealed = try SealedEntry.seal(entry.secret, owner: entry.owner, name: entry.name, vaultID: image.vaultID, key: keys.value)
        let nowMilliseconds = now.millisecondsSince1970
        let createdMilliseconds = entry.preservedTimestamps?.createdAt.millisecondsSince1970
            ?? existing.map { image.entries[$0].createdMilliseconds } ?? nowMilliseconds
        let stored = SealedEntry(
            name: entry.name, owner: entry.owner, kind: entry.kind, label: entry.label,
            createdMilliseconds: createdMilliseconds,
            updatedMilliseconds: entry.preservedTimestamps?.updatedAt.millisecondsSince1970 ?? nowMilliseconds,
            expiresMilliseconds: entry.expiresAt?.millisecondsSince1970,
            transferable: entry.transferable,
            nonce: sealed.nonce, ciphertext: sealed.ciphertext, tag: sealed.tag,
            attributes: entry.attributes)
        try noteWrite(of: key, replacing: existing.map { image.entries[$0] }, with: stored.kind)
        if let existing {
            image.entries[existing] = stored
        } else {
            image.entries.insert(stored, at: image.insertionIndex(of: key))
        }
        changed = true
        return stored.metadata
    }

    /// Removes an entry.
    /// - Throws: `.notFound` when there is none.
    public mutating func remove(named name: String, owner: String = "") throws {
        let key = EntryKey(owner: owner, name: name)
        guard let position = image.index(of: key) else { throw VaultError.entryNotFound(name) }
        try noteWrite(of: key, replacing: image.entries[position], with: nil)
        image.entries.remove(at: position)
        changed = true
    }

    /// Moves an entry to another owner, keeping its metadata and timestamps.
    /// The secret is re-encrypted, since a value is bound to its owner and name.
    /// - Parameters:
    ///   - name: the entry's name.
    ///   - owner: its owner now.
    ///   - newOwner: its owner afterwards.
    ///   - replace: overwrite an entry of the same name at the destination.
    /// - Throws: `.notFound`, `.alreadyExists` when the destination exists and `replace` is false.
    public mutating func move(named name: String, from owner: String, to newOwner: String, replace: Bool = false) throws {
        try EntryValidation.checkOwner(newOwner)
        guard let source = image.index(of: EntryKey(owner: owner, name: name)) else { throw VaultError.entryNotFound(name) }
        let entry = image.entries[source]
        let secret = try entry.open(vaultID: image.vaultID, key: keys.value, path: path)
        let destinationKey = EntryKey(owner: newOwner, name: name)
        if image.index(of: destinationKey) != nil, !replace { throw VaultError.entryExists(name) }
        let sealed = try SealedEntry.seal(secret, owner: newOwner, name: name, vaultID: image.vaultID, key: keys.value)
        var moved = entry
        moved.owner = newOwner
        moved.nonce = sealed.nonce
        moved.ciphertext = sealed.ciphertext
        moved.tag = sealed.tag
        // The value moves rather than changes: its writer goes with it, and the source keeps no history.
        let sourceKey = EntryKey(owner: owner, name: name)
        let movedWriter = recordedWriter(of: sourceKey)
        forgetHistory(of: sourceKey)
        try noteWrite(of: destinationKey, replacing: image.index(of: destinationKey).map { image.entries[$0] }, with: moved.kind,
                      writerTag: movedWriter ?? EntryWriter.migration.tag)
        image.entries.remove(at: source)
        if let existing = image.index(of: destinationKey) {
            image.entries[existing] = moved
        } else {
            image.entries.insert(moved, at: image.insertionIndex(of: destinationKey))
        }
        changed = true
    }

    /// Every owner namespace that holds at least one entry.
    public var owners: [String] {
        var seen: [String] = []
        for entry in image.entries where !(seen.last.map { $0.sameBytes(as: entry.owner) } ?? false) { seen.append(entry.owner) }
        return seen
    }

    /// Asks for a new data key when the transaction commits: every remaining secret is
    /// re-encrypted under it. This is not a crypto-shred: the passphrase or key file is
    /// unchanged, so an earlier copy of the vault file (backup, snapshot, freed disk blocks)
    /// still opens with it and still holds what was removed. The new data key only means the
    /// data key of the new file decrypts nothing that was removed.
    public mutating func rotateDataKey() {
        rotationRequested = true
        changed = true
    }

    /// Removes every entry of `owner`. - Returns: how many were removed.
    @discardableResult
    public mutating func removeAll(owner: String) -> Int {
        let before = image.entries.count
        image.entries.removeAll { $0.owner.sameBytes(as: owner) }
        forgetHistory(owner: owner)
        let removed = before - image.entries.count
        if removed > 0 { changed = true }
        return removed
    }
}
