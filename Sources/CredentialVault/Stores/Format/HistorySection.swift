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
    func index(of key: EntryKey) -> Int? {
        var low = 0, high = records.count - 1
        while low <= high {
            let mid = (low + high) / 2
            let candidate = records[mid].key
            if candidate == key { return mid }
            if candidate < key { low = mid + 1 } else { high = mid - 1 }
        }
        return nil
    }

    /// Where a record for `key` is or would be inserted.
    func insertionIndex(of key: EntryKey) -> Int {
        var low = 0, high = records.count
        while low < high {
            let mid = (low + high) / 2
            if records[mid].key < key { low = mid + 1 } else { high = mid }
        }
        return low
    }
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
        var writer = ByteWriter(capacity: 64 + owner.utf8.count + name.utf8.count)
        writer.append(contentsOf: VaultFileLayout.historyInfo)
        writer.append(contentsOf: vaultID)
        writer.append(UInt16(owner.utf8.count))
        writer.append(contentsOf: owner.utf8)
        writer.append(UInt16(name.utf8.count))
        writer.append(contentsOf: name.utf8)
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

/// Encodes and strictly decodes the history section (it follows the entries in the index plaintext).
enum HistoryCodec {
    /// At most this many records (entry keys with a history), a bound before allocating.
    static let maximumRecords = 2 * VaultLimits.maximumEntries

    static func append(_ section: HistorySection, to writer: inout ByteWriter) {
        writer.append(UInt16(section.limit))
        writer.append(UInt32(section.records.count))
        for record in section.records {
            appendString(record.owner, to: &writer)
            appendString(record.name, to: &writer)
            writer.append(record.lastVersion)
            appendString(record.lastWriter, to: &writer)
            writer.append(UInt16(record.versions.count))
            for version in record.versions {
                writer.append(version.version)
                writer.append(version.kind.code)
                var flags: UInt8 = 0
                if version.label != nil { flags |= VaultFileLayout.flagHasLabel }
                if version.expiresMilliseconds != nil { flags |= VaultFileLayout.flagHasExpiry }
                if version.transferable { flags |= VaultFileLayout.flagTransferable }
                writer.append(flags)
                if let label = version.label { appendString(label, to: &writer) }
                writer.append(version.writtenMilliseconds)
                writer.append(version.replacedMilliseconds)
                if let expires = version.expiresMilliseconds { writer.append(expires) }
                appendString(version.writer, to: &writer)
                writer.append(UInt32(version.ciphertext.count))
                writer.append(contentsOf: version.nonce)
                writer.append(contentsOf: version.ciphertext)
                writer.append(contentsOf: version.tag)
            }
        }
    }

    private static func appendString(_ text: String, to writer: inout ByteWriter) {
        writer.append(UInt16(text.utf8.count))
        writer.append(contentsOf: text.utf8)
    }

    /// Reads the section: limit in range, records strictly ascending by key, versions strictly
    /// ascending, numbered 1 … last version, no more than the limit, values within the caps.
    static func read(_ reader: inout ByteReader, _ corrupt: (String) -> VaultError) throws -> HistorySection {
        let limit = Int(try reader.readUInt16())
        guard limit <= HistoryPolicy.maximumLimit else { throw corrupt("history limit \(limit) out of range") }
        let count = Int(try reader.readUInt32())
        guard count <= maximumRecords else { throw corrupt("\(count) history records exceed the cap") }
        var records: [HistoryRecord] = []
        for _ in 0..<count {
            let owner = try readString(&reader, cap: VaultLimits.maximumNameBytes, allowEmpty: true, what: "history owner", corrupt)
            let name = try readString(&reader, cap: VaultLimits.maximumNameBytes, allowEmpty: false, what: "history name", corrupt)
            let lastVersion = try reader.readUInt32()
            guard lastVersion >= 1 else { throw corrupt("history record without a version") }
            let lastWriter = try readString(&reader, cap: EntryWriter.maximumBytes, allowEmpty: true, what: "writer", corrupt)
            let versionCount = Int(try reader.readUInt16())
            guard versionCount <= limit else { throw corrupt("more history versions than the limit") }
            var versions: [SealedVersion] = []
            for _ in 0..<versionCount {
                let number = try reader.readUInt32()
                guard number >= 1, number <= lastVersion, number > (versions.last?.version ?? 0) else {
                    throw corrupt("history versions out of order")
                }
                let kindCode = try reader.readUInt8()
                guard let kind = EntryKind(code: kindCode) else { throw corrupt("unknown entry kind \(kindCode)") }
                let flags = try reader.readUInt8()
                let known = VaultFileLayout.flagHasLabel | VaultFileLayout.flagHasExpiry | VaultFileLayout.flagTransferable
                guard flags & ~known == 0 else { throw corrupt("unknown history flags") }
                let label = flags & VaultFileLayout.flagHasLabel != 0
                    ? try readString(&reader, cap: VaultLimits.maximumLabelBytes, allowEmpty: true, what: "label", corrupt) : nil
                let written = try reader.readInt64()
                let replaced = try reader.readInt64()
                let expires = flags & VaultFileLayout.flagHasExpiry != 0 ? try reader.readInt64() : nil
                let writer = try readString(&reader, cap: EntryWriter.maximumBytes, allowEmpty: true, what: "writer", corrupt)
                let length = Int(try reader.readUInt32())
                guard length <= VaultLimits.maximumSecretBytes else { throw corrupt("history value larger than the cap") }
                let nonce = Array(try reader.readBytes(VaultFileLayout.nonceByteCount))
                let ciphertext = Array(try reader.readBytes(length))
                let tag = Array(try reader.readBytes(VaultFileLayout.tagByteCount))
                versions.append(SealedVersion(version: number, kind: kind, label: label, expiresMilliseconds: expires,
                                              transferable: flags & VaultFileLayout.flagTransferable != 0,
                                              writtenMilliseconds: written, replacedMilliseconds: replaced, writer: writer,
                                              nonce: nonce, ciphertext: ciphertext, tag: tag))
            }
            let record = HistoryRecord(owner: owner, name: name, lastVersion: lastVersion, lastWriter: lastWriter, versions: versions)
            if let previous = records.last, !(previous.key < record.key) { throw corrupt("history records out of order or duplicated") }
            records.append(record)
        }
        return HistorySection(limit: limit, records: records)
    }

    private static func readString(_ reader: inout ByteReader, cap: Int, allowEmpty: Bool, what: String,
                                   _ corrupt: (String) -> VaultError) throws -> String {
        let length = Int(try reader.readUInt16())
        guard length <= cap, allowEmpty || length > 0 else { throw corrupt("\(what) length \(length) out of range") }
        let bytes = try reader.readBytes(length)
        let string = String(decoding: bytes, as: UTF8.self)
        guard string.utf8.elementsEqual(bytes) else { throw corrupt("\(what) is not valid UTF-8") }
        return string
    }
}
