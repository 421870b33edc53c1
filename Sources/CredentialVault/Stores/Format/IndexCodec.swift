/// Encodes and strictly decodes the plaintext of the entry index.
enum IndexCodec {
    static func encode(_ entries: [SealedEntry], vaultID: [UInt8], generation: UInt64) -> [UInt8] {
        var writer = ByteWriter(capacity: 32 + entries.count * 120)
        writer.append(contentsOf: vaultID)
        writer.append(generation)
        writer.append(UInt32(entries.count))
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
            writer.append(flags)
            if let label = entry.label {
                writer.append(UInt16(label.utf8.count))
                writer.append(contentsOf: label.utf8)
            }
            writer.append(entry.createdMilliseconds)
            writer.append(entry.updatedMilliseconds)
            if let expires = entry.expiresMilliseconds { writer.append(expires) }
            writer.append(offset)
            writer.append(UInt32(entry.ciphertext.count))
            writer.append(contentsOf: entry.nonce)
            writer.append(contentsOf: entry.tag)
            offset += UInt64(entry.ciphertext.count)
        }
        return writer.bytes
    }

    /// Decodes the index, checking its binding to the header, caps, strict order,
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

        var entries: [SealedEntry] = []
        entries.reserveCapacity(count)
        var expectedOffset: UInt64 = 0
        for _ in 0..<count {
            let owner = try readString(&reader, cap: VaultLimits.maximumNameBytes, allowEmpty: true, what: "owner", corrupt)
            let name = try readString(&reader, cap: VaultLimits.maximumNameBytes, allowEmpty: false, what: "name", corrupt)
            let kindCode = try reader.readUInt8()
            guard let kind = EntryKind(code: kindCode) else { throw corrupt("unknown entry kind \(kindCode)") }
            let flags = try reader.readUInt8()
            guard flags & ~VaultFileLayout.knownEntryFlags == 0 else { throw corrupt("unknown entry flags") }
            let label = flags & VaultFileLayout.flagHasLabel != 0
                ? try readString(&reader, cap: VaultLimits.maximumLabelBytes, allowEmpty: true, what: "label", corrupt) : nil
            let created = try reader.readInt64()
            let updated = try reader.readInt64()
            let expires = flags & VaultFileLayout.flagHasExpiry != 0 ? try reader.readInt64() : nil
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
                                    nonce: nonce, ciphertext: values[start..<(start + length)], tag: tag)
            if let previous = entries.last, !(previous.key < entry.key) {
                throw corrupt("entries out of order or duplicated")
            }
            entries.append(entry)
            expectedOffset += UInt64(length)
        }
        guard expectedOffset == UInt64(values.count) else { throw corrupt("values section has unclaimed bytes") }
        let padding = try reader.readBytes(reader.remaining)
        guard padding.allSatisfy({ $0 == 0 }) else { throw corrupt("non-zero padding") }
        return entries
    }

    private static func readString(_ reader: inout ByteReader, cap: Int, allowEmpty: Bool, what: String,
                                   _ corrupt: (String) -> VaultError) throws -> String {
        let length = Int(try reader.readUInt16())
        guard length <= cap, allowEmpty || length > 0 else { throw corrupt("\(what) length \(length) out of range") }
        let bytes = try reader.readBytes(length)
        // Decoding repairs invalid UTF-8 with U+FFFD, so the bytes round-trip exactly only when
        // they were valid. (Faster than String(validating:as:), which is not specialised here.)
        let string = String(decoding: bytes, as: UTF8.self)
        guard string.utf8.elementsEqual(bytes) else { throw corrupt("\(what) is not valid UTF-8") }
        return string
    }
}
