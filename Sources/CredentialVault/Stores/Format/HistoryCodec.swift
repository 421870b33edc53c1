/// Encodes and strictly decodes the history section (it follows the entries in the index plaintext).
enum HistoryCodec {
    /// At most this many records (entry keys with a history), a bound before allocating.
    static let maximumRecords = 2 * VaultLimits.maximumEntries

    /// Appends the section: limit, records in key order, each with its kept versions.
    static func append(_ section: HistorySection, to writer: inout ByteWriter) {
        writer.append(UInt16(section.limit))
        writer.append(UInt32(section.records.count))
        for record in section.records {
            writer.appendLengthPrefixed(record.owner)
            writer.appendLengthPrefixed(record.name)
            writer.append(record.lastVersion)
            writer.appendLengthPrefixed(record.lastWriter)
            writer.append(UInt16(record.versions.count))
            for version in record.versions {
                writer.append(version.version)
                writer.append(version.kind.code)
                var flags: UInt8 = 0
                if version.label != nil { flags |= VaultFileLayout.flagHasLabel }
                if version.expiresMilliseconds != nil { flags |= VaultFileLayout.flagHasExpiry }
                if version.transferable { flags |= VaultFileLayout.flagTransferable }
                writer.append(flags)
                if let label = version.label { writer.appendLengthPrefixed(label) }
                writer.append(version.writtenMilliseconds)
                writer.append(version.replacedMilliseconds)
                if let expires = version.expiresMilliseconds { writer.append(expires) }
                writer.appendLengthPrefixed(version.writer)
                writer.append(UInt32(version.ciphertext.count))
                writer.append(contentsOf: version.nonce)
                writer.append(contentsOf: version.ciphertext)
                writer.append(contentsOf: version.tag)
            }
        }
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
            let owner = try reader.readLengthPrefixedString(cap: VaultLimits.maximumNameBytes, allowEmpty: true, what: "history owner", corrupt)
            let name = try reader.readLengthPrefixedString(cap: VaultLimits.maximumNameBytes, allowEmpty: false, what: "history name", corrupt)
            let lastVersion = try reader.readUInt32()
            guard lastVersion >= 1 else { throw corrupt("history record without a version") }
            let lastWriter = try reader.readLengthPrefixedString(cap: EntryWriter.maximumBytes, allowEmpty: true, what: "writer", corrupt)
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
                    ? try reader.readLengthPrefixedString(cap: VaultLimits.maximumLabelBytes, allowEmpty: true, what: "label", corrupt) : nil
                let written = try reader.readInt64()
                let replaced = try reader.readInt64()
                let expires = flags & VaultFileLayout.flagHasExpiry != 0 ? try reader.readInt64() : nil
                let writer = try reader.readLengthPrefixedString(cap: EntryWriter.maximumBytes, allowEmpty: true, what: "writer", corrupt)
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
}
