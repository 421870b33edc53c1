import VaultCrypto

/// The earlier values of entries, sealed inside the index of a version 3 file (header flag
/// `VaultFileLayout.headerFlagHistory`; docs/FORMAT.md, "History"). Kept apart from the entries,
/// so no listing, lookup, verify or migration of entries can meet a history version by mistake.
struct HistorySection: Sendable, Equatable {
    /// How many earlier versions are kept per entry (0 … `HistoryPolicy.maximumLimit`).
    var limit: Int = HistoryPolicy.defaultLimit
    /// One record per entry key that has a tracked writer or kept versions, strictly ascending by key.
    var records: [HistoryRecord] = []

    /// True when writing the section would say nothing (the default limit, no records): the file
    /// is then written without it, byte for byte as before history existed.
    var isEmpty: Bool { limit == HistoryPolicy.defaultLimit && records.isEmpty }

    /// Binary search for a record.
    func index(of key: EntryKey) -> Int? { records.position(of: key) }

    /// Where a record for `key` is or would be inserted.
    func insertionIndex(of key: EntryKey) -> Int { records.insertionPosition(of: key) }
}

/// The history of one entry key: the number and writer of its latest value, and its kept versions.
struct HistoryRecord: Sendable, Equatable {
    var owner: String
    var name: String
    /// The number of the latest value written (the current one, or the removed one).
    var lastVersion: UInt32
    /// Who wrote that value.
    var lastWriter: String
    /// Kept earlier values, strictly ascending by version, at most the section's limit.
    var versions: [SealedVersion]

    var key: EntryKey { EntryKey(owner: owner, name: name) }
}

/// One earlier value, sealed under the history key with its entry and version number in the AAD.
struct SealedVersion: Sendable, Equatable {
    var version: UInt32
    var kind: EntryKind
    var label: String?
    var expiresMilliseconds: Int64?
    var transferable: Bool
    var writtenMilliseconds: Int64
    var replacedMilliseconds: Int64
    var writer: String
    var nonce: [UInt8]
    var ciphertext: [UInt8]
    var tag: [UInt8]

    /// "vault/v3/history" ‖ vault id ‖ owner ‖ name ‖ version: a version cannot move to another
    /// entry, vault or number, nor pass for an entry's value (whose AAD and key differ).
    static func aad(vaultID: [UInt8], owner: String, name: String, version: UInt32) -> [UInt8] {
        var writer = SealedEntry.entryBinding(VaultFileLayout.historyInfo, vaultID: vaultID, owner: owner, name: name)
        writer.append(version)
        return writer.bytes
    }

    /// Seals `secret`, the value `entry` held as `version`, replaced at `replacedMilliseconds`.
    static func seal(_ secret: SecureBytes, of entry: SealedEntry, version: UInt32, writer: String, replacedMilliseconds: Int64,
                     vaultID: [UInt8], key: SymmetricKey) throws -> SealedVersion {
        let box = try AES256GCM.seal(secret, using: key,
                                     authenticating: aad(vaultID: vaultID, owner: entry.owner, name: entry.name, version: version))
        return SealedVersion(version: version, kind: entry.kind, label: entry.label, expiresMilliseconds: entry.expiresMilliseconds,
                             transferable: entry.transferable, writtenMilliseconds: entry.updatedMilliseconds,
                             replacedMilliseconds: replacedMilliseconds, writer: writer,
                             nonce: box.nonce.bytes, ciphertext: box.ciphertext, tag: box.tag)
    }

    /// Opens the value. - Throws: `.tampered` naming the entry and version when it does not verify.
    func open(owner: String, name: String, vaultID: [UInt8], key: SymmetricKey, path: String?) throws -> SecureBytes {
        do {
            let box = try AES256GCM.SealedBox(nonce: AES256GCM.Nonce(bytes: nonce), ciphertext: ciphertext, tag: tag)
            return try AES256GCM.open(box, using: key, authenticating: Self.aad(vaultID: vaultID, owner: owner, name: name, version: version))
        } catch let error as CryptoError where error.isAuthenticationFailure {
            throw VaultError.tampered(region: "version \(version) of entry '\(name)'", path: path)
        }
    }

    /// Re-seals under another history key (a new data key).
    func resealed(owner: String, name: String, vaultID: [UInt8], from old: SymmetricKey, to new: SymmetricKey, path: String?) throws -> SealedVersion {
        let secret = try open(owner: owner, name: name, vaultID: vaultID, key: old, path: path)
        let box = try AES256GCM.seal(secret, using: new, authenticating: Self.aad(vaultID: vaultID, owner: owner, name: name, version: version))
        var copy = self
        copy.nonce = box.nonce.bytes
        copy.ciphertext = box.ciphertext
        copy.tag = box.tag
        return copy
    }
}
