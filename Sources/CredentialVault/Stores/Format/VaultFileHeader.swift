import VaultCrypto

/// The key slot: how to turn the user's key into the key-encryption key (KEK),
/// and the data key (DEK) wrapped under it.
struct KeySlot: Sendable, Equatable {
    var kind: KeySlotKind
    /// scrypt parameters; all zero for `.keyMaterial`.
    var scrypt: Scrypt.Parameters
    var salt: [UInt8]
    var wrapNonce: [UInt8]
    var wrappedDEK: [UInt8]
    var wrapTag: [UInt8]
}

/// The fixed-size plaintext header of a v1 vault file.
struct VaultFileHeader: Sendable, Equatable {
    var minorVersion: UInt8
    var vaultID: [UInt8]
    var slot: KeySlot
    var generation: UInt64
    var indexCiphertextLength: UInt32
    var valuesLength: UInt64
    var mac: [UInt8]

    /// The bytes covered by the wrapped key's AAD: magic through salt.
    func wrapAAD() -> [UInt8] {
        var writer = ByteWriter(capacity: VaultFileLayout.wrapAADEnd)
        writer.append(contentsOf: VaultFileLayout.magic)
        writer.append(VaultFileLayout.majorVersion)
        writer.append(minorVersion)
        writer.append(UInt16(0))
        writer.append(contentsOf: vaultID)
        writer.append(slot.kind.rawValue)
        writer.append(slot.scrypt.logN)
        writer.append(slot.scrypt.r)
        writer.append(slot.scrypt.p)
        writer.append(contentsOf: slot.salt)
        return writer.bytes
    }

    /// The bytes covered by the header MAC.
    func macedBytes() -> [UInt8] {
        var writer = ByteWriter(capacity: VaultFileLayout.macedEnd)
        writer.append(contentsOf: wrapAAD())
        writer.append(contentsOf: slot.wrapNonce)
        writer.append(contentsOf: slot.wrappedDEK)
        writer.append(contentsOf: slot.wrapTag)
        writer.append(generation)
        writer.append(indexCiphertextLength)
        writer.append(valuesLength)
        return writer.bytes
    }

    /// The complete 190-byte header, with the MAC and checksum.
    func encoded() throws -> [UInt8] {
        var bytes = macedBytes()
        bytes.append(contentsOf: mac)
        let checksum = try SHA256.hash(bytes)
        bytes.append(contentsOf: checksum[0..<VaultFileLayout.checksumByteCount])
        return bytes
    }

    /// The total file length this header announces (saturating: hostile lengths must not trap).
    var announcedFileLength: UInt64 {
        let fixed = UInt64(VaultFileLayout.headerByteCount + VaultFileLayout.nonceByteCount + VaultFileLayout.tagByteCount)
        let (withIndex, overflow1) = fixed.addingReportingOverflow(UInt64(indexCiphertextLength))
        let (total, overflow2) = withIndex.addingReportingOverflow(valuesLength)
        return overflow1 || overflow2 ? UInt64.max : total
    }

    /// Parses and checks the header before any key work: magic, version, flags,
    /// checksum, slot shape, and that the announced length equals the file length.
    /// - Throws: `.corrupt`, `.unsupportedVersion`.
    static func parse(_ file: [UInt8], path: String?) throws -> VaultFileHeader {
        guard file.count >= VaultFileLayout.magic.count,
              Array(file[0..<VaultFileLayout.magic.count]) == VaultFileLayout.magic else {
            throw VaultError.corrupt("not a vault file (bad magic bytes)", path: path)
        }
        guard file.count >= 10 else { throw VaultError.corrupt("header ends early", path: path) }
        let major = file[8], minor = file[9]
        guard major == VaultFileLayout.majorVersion else {
            throw VaultError(.unsupportedVersion,
                             "vault format version \(major).\(minor) is not supported; this build reads version \(VaultFileLayout.majorVersion).x",
                             path: path, fix: "open it with the vault release that wrote it, or a newer one")
        }
        guard file.count >= VaultFileLayout.headerByteCount else {
            throw VaultError.corrupt("header ends early (\(file.count) of \(VaultFileLayout.headerByteCount) bytes)", path: path)
        }
        let checksum = try SHA256.hash(Array(file[0..<VaultFileLayout.checksummedEnd]))
        guard Array(checksum[0..<VaultFileLayout.checksumByteCount])
                == Array(file[VaultFileLayout.checksummedEnd..<VaultFileLayout.headerByteCount]) else {
            throw VaultError.corrupt("header checksum mismatch (the header was altered or damaged)", path: path)
        }

        var reader = ByteReader(Array(file[0..<VaultFileLayout.headerByteCount]), region: "header", offset: 10)
        let flags = try reader.readUInt16()
        guard flags == 0 else {
            throw VaultError(.unsupportedVersion, "vault header has unknown flags 0x\(String(flags, radix: 16))",
                             path: path, fix: "open it with the vault release that wrote it, or a newer one")
        }
        let vaultID = Array(try reader.readBytes(VaultFileLayout.vaultIDByteCount))
        let kindByte = try reader.readUInt8()
        guard let kind = KeySlotKind(rawValue: kindByte) else {
            throw VaultError.corrupt("unknown key slot kind \(kindByte)", path: path)
        }
        let parameters = Scrypt.Parameters(logN: try reader.readUInt8(), r: try reader.readUInt32(), p: try reader.readUInt32())
        if kind == .keyMaterial, parameters != Scrypt.Parameters(logN: 0, r: 0, p: 0) {
            throw VaultError.corrupt("key-file slot carries scrypt parameters", path: path)
        }
        let salt = Array(try reader.readBytes(VaultFileLayout.saltByteCount))
        let wrapNonce = Array(try reader.readBytes(VaultFileLayout.nonceByteCount))
        let wrapped = Array(try reader.readBytes(VaultFileLayout.dekByteCount))
        let wrapTag = Array(try reader.readBytes(VaultFileLayout.tagByteCount))
        let generation = try reader.readUInt64()
        let indexLength = try reader.readUInt32()
        let valuesLength = try reader.readUInt64()
        let mac = Array(try reader.readBytes(VaultFileLayout.macByteCount))

        let header = VaultFileHeader(
            minorVersion: minor, vaultID: vaultID,
            slot: KeySlot(kind: kind, scrypt: parameters, salt: salt, wrapNonce: wrapNonce, wrappedDEK: wrapped, wrapTag: wrapTag),
            generation: generation, indexCiphertextLength: indexLength, valuesLength: valuesLength, mac: mac)

        guard header.announcedFileLength <= UInt64(VaultLimits.maximumFileBytes) else {
            throw VaultError.corrupt("header announces more than the \(VaultLimits.maximumFileBytes)-byte cap", path: path)
        }
        guard header.announcedFileLength == UInt64(file.count) else {
            throw VaultError.corrupt("file is \(file.count) bytes but its header announces \(header.announcedFileLength) (truncated or extended)", path: path)
        }
        return header
    }
}
