/// What the index holds besides the entries.
struct IndexContents {
    var generation: UInt64
    /// v2 and v3: the key of the rollback record (see `RollbackRecord`); nil for v1.
    var stateKey: [UInt8]?
    var entries: [SealedEntry]
    /// v3 with the header's history flag: the entries' earlier values (nil: none written).
    var history: HistorySection? = nil
}

/// Encodes and strictly decodes the plaintext of the entry index.
enum IndexCodec {
    /// The plaintext of a v1 index (kept for tests and the fuzz harness: this build writes v2 and v3 only).
    static func encode(_ entries: [SealedEntry], vaultID: [UInt8], generation: UInt64) -> [UInt8] {
        var writer = ByteWriter(capacity: 32 + entries.count * 120)
        writer.append(contentsOf: vaultID)
        writer.append(generation)
        writer.append(UInt32(entries.count))
        appendEntries(entries, to: &writer)
        return writer.bytes
    }

    /// The plaintext of a v2 index, without its padding: vault id, generation, entry count,
    /// exact values length, state key, entries.
    /// A history section, when given, follows the entries (v3 only; the header's history flag says so).
    static func encodeV2(_ entries: [SealedEntry], vaultID: [UInt8], generation: UInt64, stateKey: [UInt8],
                         history: HistorySection? = nil) -> [UInt8] {
        var writer = ByteWriter(capacity: 72 + entries.count * 120)
        writer.append(contentsOf: vaultID)
        writer.append(generation)
        writer.append(UInt32(entries.count))
        writer.append(UInt64(entries.reduce(0) { $0 + $1.ciphertext.count }))
        writer.append(contentsOf: stateKey)
        appendEntries(entries, to: &writer)
        if let history { HistoryCodec.append(history, to: &writer) }
        return writer.bytes
    }

    /// The padded v2 plaintext length for `unpadded` bytes: the smallest length at least
    /// `unpadded` that makes header + index nonce + index + tag a multiple of the quantum.
    static func paddedV2Length(unpadded: Int) -> Int {
        let fixed = HeaderLayout.v2.headerByteCount + VaultFileLayout.nonceByteCount + VaultFileLayout.tagByteCount
        return VaultFileLayout.paddedUp(fixed + unpadded) - fixed
    }

    private static func appendEntries(_ entries: [SealedEntry], to writer: inout ByteWriter) {
        var offset: UInt64 = 0
        for entry in entries {
            writer.append(UInt16(entry.owner.utf8.count))
            writer.append(contentsOf: entry.owner.utf8)
            writer.append(UInt16(entry.name.utf8.count))
            writer.append(contentsOf: entry.name.utf8)
            writer.append(entry.kind.code)
            var flags: UInt8 = 0
            if entry.label != nil { flags |= VaultFileLayout.flagHasLabel }
            if entry.expiresMilliseconds != nil { flags |= VaultFileLayout.flagHasExpiry }
            if entry.transferable { flags |= VaultFileLayout.flagTransferable }
            if !entry.attributes.isEmpty { flags |= VaultFileLayout.flagHasAttributes }
            writer.append(flags)
            if let label = entry.label {
                writer.append(UInt16(label.utf8.count))
                writer.append(contentsOf: label.utf8)
            }
            writer.append(entry.createdMilliseconds)
            writer.append(entry.updatedMilliseconds)
            if let expires = entry.expiresMilliseconds { writer.append(expires) }
            if !entry.attributes.isEmpty { appendAttributes(entry.sortedAttributes, to: &writer) }
            writer.append(offset)
            writer.append(UInt32(entry.ciphertext.count))
            writer.append(contentsOf: entry.nonce)
            writer.append(contentsOf: entry.tag)
            offset += UInt64(entry.ciphertext.count)
        }
    }

    /// count (u8, 1…64), then each (u16 name length, name, u16 value length, value) by ascending name bytes.
    private static func appendAttributes(_ attributes: [(name: String, value: String)], to writer: inout ByteWriter) {
        writer.append(UInt8(clamping: attributes.count))
        for attribute in attributes {
            writer.append(UInt16(attribute.name.utf8.count))
            writer.append(contentsOf: attribute.name.utf8)
            writer.append(UInt16(attribute.value.utf8.count))
            writer.append(contentsOf: attribute.value.utf8)
        }
    }

    /// Decodes a v1 index, checking its binding to the header, caps, strict order,
    /// contiguous value offsets, and all-zero padding.
    static func decode(_ plain: [UInt8], vaultID: [UInt8], generation: UInt64, values: ArraySlice<UInt8>,
                       path: String?) throws -> [SealedEntry] {
        var reader = ByteReader(plain, region: "entry index")
        func corrupt(_ why: String) -> VaultError { VaultError.tampered(region: "entry index (\(why))", path: path) }

        guard Array(try reader.readBytes(VaultFileLayout.vaultIDByteCount)) == vaultID else {
            throw corrupt("belongs to another vault")
        }
        guard try reader.readUInt64() == generation else { throw corrupt("generation differs from the header") }
        let count = Int(try reader.readUInt32())
        guard count <= VaultLimits.maximumEntries else { throw corrupt("\(count) entries exceed the cap") }
        let entries = try decodeEntries(&reader, count: count, values: values, corrupt)
        try checkZeroPadding(&reader, corrupt)
        return entries
    }

    /// Decodes a v2 or v3 index: as v1, plus the exact values length (the region after it must be
    /// zero and exactly the padded size), the state key, and canonical index padding.
    /// `valuesRegion` is the values and their padding: in v3, the opened values layer, whose
    /// salt (`regionOverhead` bytes) count towards the padded size.
    /// `hasHistory` (the header's history flag): a history section follows the entries.
    static func decodeV2(_ plain: [UInt8], vaultID: [UInt8], valuesRegion: ArraySlice<UInt8>, regionOverhead: Int = 0,
                         hasHistory: Bool = false, path: String?) throws -> IndexContents {
        var reader = ByteReader(plain, region: "entry index")
        func corrupt(_ why: String) -> VaultError { VaultError.tampered(region: "entry index (\(why))", path: path) }

        guard Array(try reader.readBytes(VaultFileLayout.vaultIDByteCount)) == vaultID else {
            throw corrupt("belongs to another vault")
        }
        let generation = try reader.readUInt64()
        let count = Int(try reader.readUInt32())
        guard count <= VaultLimits.maximumEntries else { throw corrupt("\(count) entries exceed the cap") }
        let valuesLength = try reader.readUInt64()
        guard valuesLength <= UInt64(valuesRegion.count),
              VaultFileLayout.paddedUp(Int(valuesLength) + regionOverhead) - regionOverhead == valuesRegion.count else {
            throw corrupt("values length \(valuesLength) does not match the padded values region of \(valuesRegion.count + regionOverhead) bytes")
        }
        let stateKey = Array(try reader.readBytes(VaultFileLayout.stateKeyByteCount))
        let values = valuesRegion.prefix(Int(valuesLength))
        let entries = try decodeEntries(&reader, count: count, values: values, corrupt)
        let history = hasHistory ? try HistoryCodec.read(&reader, corrupt) : nil
        guard plain.count == paddedV2Length(unpadded: reader.offset) else { throw corrupt("padding is not the canonical length") }
        try checkZeroPadding(&reader, corrupt)
        guard valuesRegion[values.endIndex...].allSatisfy({ $0 == 0 }) else {
            throw VaultError.tampered(region: "values region (non-zero padding)", path: path)
        }
        return IndexContents(generation: generation, stateKey: stateKey, entries: entries, history: history)
    }

    private static func checkZeroPadding(_ reader: inout ByteReader, _ corrupt: (String) -> VaultError) throws {
        let padding = try reader.readBytes(reader.remaining)
        guard padding.allSatisfy({ $0 == 0 }) else { throw corrupt("non-zero padding") }
    }

    private static func decodeEntries(_ reader: inout ByteReader, count: Int, values: ArraySlice<UInt8>,
                                      _ corrupt: (String) -> VaultError) throws -> [SealedEntry] {

        var entries: [SealedEntry] = []
        entries.reserveCapacity(count)
        var expectedOffset: UInt64 = 0
        for _ in 0..<count {
            let owner = try reader.readLengthPrefixedString(cap: VaultLimits.maximumNameBytes, allowEmpty: true, what: "owner", corrupt)
            let name = try reader.readLengthPrefixedString(cap: VaultLimits.maximumNameBytes, allowEmpty: false, what: "name", corrupt)
            let kindCode = try reader.readUInt8()
            guard let kind = EntryKind(code: kindCode) else { throw corrupt("unknown entry kind \(kindCode)") }
            let flags = try reader.readUInt8()
            guard flags & ~VaultFileLayout.knownEntryFlags == 0 else { throw corrupt("unknown entry flags") }
            let label = flags & VaultFileLayout.flagHasLabel != 0
                ? try reader.readLengthPrefixedString(cap: VaultLimits.maximumLabelBytes, allowEmpty: true, what: "label", corrupt) : nil
            let created = try reader.readInt64()
            let updated = try reader.readInt64()
            let expires = flags & VaultFileLayout.flagHasExpiry != 0 ? try reader.readInt64() : nil
            let attributes = flags & VaultFileLayout.flagHasAttributes != 0 ? try readAttributes(&reader, corrupt) : [:]
            let offset = try reader.readUInt64()
            let length = Int(try reader.readUInt32())
            guard offset == expectedOffset else { throw corrupt("value offsets are not contiguous") }
            guard length <= VaultLimits.maximumSecretBytes else { throw corrupt("value larger than the cap") }
            guard offset <= UInt64(values.count), UInt64(values.count) - offset >= UInt64(length) else {
                throw corrupt("value runs past the end of the file")
            }
            let nonce = Array(try reader.readBytes(VaultFileLayout.nonceByteCount))
            let tag = Array(try reader.readBytes(VaultFileLayout.tagByteCount))
            let start = values.startIndex + Int(offset)
            let entry = SealedEntry(name: name, owner: owner, kind: kind, label: label,
                                    createdMilliseconds: created, updatedMilliseconds: updated, expiresMilliseconds: expires,
                                    transferable: flags & VaultFileLayout.flagTransferable != 0,
                                    nonce: nonce, ciphertext: values[start..<(start + length)], tag: tag,
                                    attributes: attributes)
            if let previous = entries.last, !(previous.key < entry.key) {
                throw corrupt("entries out of order or duplicated")
            }
            entries.append(entry)
            expectedOffset += UInt64(length)
        }
        guard expectedOffset == UInt64(values.count) else { throw corrupt("values section has unclaimed bytes") }
        return entries
    }

    /// The attributes of an entry with flag bit 3: 1…64 pairs, names strictly ascending by bytes,
    /// within the caps and without NUL (what a writer checks), so a file has one encoding only.
    private static func readAttributes(_ reader: inout ByteReader, _ corrupt: (String) -> VaultError) throws -> [String: String] {
        let count = Int(try reader.readUInt8())
        guard count >= 1, count <= VaultLimits.maximumAttributes else { throw corrupt("attribute count \(count) out of range") }
        var attributes: [String: String] = [:]
        attributes.reserveCapacity(count)
        var previousName: String?
        for _ in 0..<count {
            let name = try reader.readLengthPrefixedString(cap: VaultLimits.maximumAttributeNameBytes, allowEmpty: false,
                                      what: "attribute name", corrupt)
            let value = try reader.readLengthPrefixedString(cap: VaultLimits.maximumAttributeValueBytes, allowEmpty: true,
                                       what: "attribute value", corrupt)
            guard !name.utf8.contains(0), !value.utf8.contains(0) else { throw corrupt("attribute holds a NUL byte") }
            if let previousName, !previousName.utf8.lexicographicallyPrecedes(name.utf8) {
                throw corrupt("attributes out of order or duplicated")
            }
            // Names that differ in bytes but are canonically equivalent are one Swift dictionary key.
            guard attributes.updateValue(value, forKey: name) == nil else { throw corrupt("attribute names are equivalent") }
            previousName = name
        }
        return attributes
    }
}
