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

/// The fixed-size plaintext header of a vault file (v1: 190 bytes, v2 and v3: 182 bytes).
struct VaultFileHeader: Sendable, Equatable {
    var layout: HeaderLayout
    var minorVersion: UInt8
    var vaultID: [UInt8]
    var slot: KeySlot
    /// v1 only (in v2 the generation is inside the encrypted index); 0 for v2.
    var generation: UInt64
    /// v1: the exact ciphertext length of the index; v2: the same, padded (see `docs/FORMAT.md`).
    var indexCiphertextLength: UInt32
    /// v1: the exact length of the values section; v2, v3: the padded size of the values region.
    var valuesLength: UInt64
    var mac: [UInt8]
    /// Header flags: 0, or (v3) `VaultFileLayout.headerFlagHistory`, `headerFlagAttributes`, `headerFlagNewerKinds`.
    var flags: UInt16 = 0

    /// The bytes covered by the wrapped key's AAD: magic through salt.
    func wrapAAD() -> [UInt8] {
        var writer = ByteWriter(capacity: VaultFileLayout.wrapAADEnd)
        writer.append(contentsOf: VaultFileLayout.magic)
        writer.append(layout.majorVersion)
        writer.append(minorVersion)
        writer.append(flags)
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
        var writer = ByteWriter(capacity: layout.macedEnd)
        writer.append(contentsOf: wrapAAD())
        writer.append(contentsOf: slot.wrapNonce)
        writer.append(contentsOf: slot.wrappedDEK)
        writer.append(contentsOf: slot.wrapTag)
        if layout.majorVersion == 1 { writer.append(generation) }
        writer.append(indexCiphertextLength)
        writer.append(valuesLength)
        return writer.bytes
    }

    /// The complete header, with the MAC and checksum.
    func encoded() throws -> [UInt8] {
        var bytes = macedBytes()
        bytes.append(contentsOf: mac)
        let checksum = try SHA256.hash(bytes)
        bytes.append(contentsOf: checksum[0..<VaultFileLayout.checksumByteCount])
        return bytes
    }

    /// Where the values start.
    var valuesStart: Int {
        layout.headerByteCount + VaultFileLayout.nonceByteCount + Int(indexCiphertextLength) + VaultFileLayout.tagByteCount
    }

    /// The total file length this header announces (saturating: hostile lengths must not trap).
    var announcedFileLength: UInt64 {
        let fixed = UInt64(layout.headerByteCount + VaultFileLayout.nonceByteCount + VaultFileLayout.tagByteCount)
        let (withIndex, overflow1) = fixed.addingReportingOverflow(UInt64(indexCiphertextLength))
        let (total, overflow2) = withIndex.addingReportingOverflow(valuesLength)
        return overflow1 || overflow2 ? UInt64.max : total
    }

    /// The major version of `file`, after checking the magic (for callers that only route on it).
    static func majorVersion(of file: [UInt8]) -> UInt8? {
        guard file.count > 8, Array(file[0..<VaultFileLayout.magic.count]) == VaultFileLayout.magic else { return nil }
        return file[8]
    }

    /// Parses and checks the header before any key work: magic, version, flags,
    /// checksum, slot shape, padding (v2, v3), and that the announced length equals the file length.
    /// - Throws: `.corrupt`, `.unsupportedVersion`.
    static func parse(_ file: [UInt8], path: String?) throws -> VaultFileHeader {
        guard file.count >= VaultFileLayout.magic.count,
              Array(file[0..<VaultFileLayout.magic.count]) == VaultFileLayout.magic else {
            throw VaultError.corrupt("not a vault file (bad magic bytes)", path: path)
        }
        // The documented reading order (docs/FORMAT.md): magic, then the major version, then the
        // rest; a file that ends right after an unknown major is "unsupported version".
        guard file.count > VaultFileLayout.magic.count else { throw VaultError.corrupt("header ends early", path: path) }
        let major = file[8]
        guard let layout = HeaderLayout.forMajor(major) else {
            let minor = file.count > 9 ? String(file[9]) : "?"
            throw VaultError(.unsupportedVersion,
                             "vault format version \(major).\(minor) is not supported; this build reads versions 1.x, 2.x and 3.x",
                             path: path, fix: "open it with the vault release that wrote it, or a newer one")
        }
        guard file.count >= 10 else { throw VaultError.corrupt("header ends early", path: path) }
        let minor = file[9]
        guard file.count >= layout.headerByteCount else {
            throw VaultError.corrupt("header ends early (\(file.count) of \(layout.headerByteCount) bytes)", path: path)
        }
        let checksum = try SHA256.hash(Array(file[0..<layout.checksummedEnd]))
        guard Array(checksum[0..<VaultFileLayout.checksumByteCount]) == Array(file[layout.checksummedEnd..<layout.headerByteCount]) else {
            throw VaultError.corrupt("header checksum mismatch (the header was altered or damaged)", path: path)
        }

        var reader = ByteReader(Array(file[0..<layout.headerByteCount]), region: "header", offset: 10)
        let flags = try reader.readUInt16()
        let knownFlags = layout.majorVersion >= 3
            ? VaultFileLayout.headerFlagHistory | VaultFileLayout.headerFlagAttributes | VaultFileLayout.headerFlagNewerKinds : 0
        guard flags & ~knownFlags == 0 else {
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
        let generation = layout.majorVersion == 1 ? try reader.readUInt64() : 0
        let indexLength = try reader.readUInt32()
        let valuesLength = try reader.readUInt64()
        let mac = Array(try reader.readBytes(VaultFileLayout.macByteCount))

        let header = VaultFileHeader(
            layout: layout, minorVersion: minor, vaultID: vaultID,
            slot: KeySlot(kind: kind, scrypt: parameters, salt: salt, wrapNonce: wrapNonce, wrappedDEK: wrapped, wrapTag: wrapTag),
            generation: generation, indexCiphertextLength: indexLength, valuesLength: valuesLength, mac: mac, flags: flags)

        guard header.announcedFileLength <= UInt64(VaultLimits.maximumFileBytes) else {
            throw VaultError.corrupt("header announces more than the \(VaultLimits.maximumFileBytes)-byte cap", path: path)
        }
        guard header.announcedFileLength == UInt64(file.count) else {
            throw VaultError.corrupt("file is \(file.count) bytes but its header announces \(header.announcedFileLength) (truncated or extended)", path: path)
        }
        if layout.majorVersion >= 2 {
            let quantum = UInt64(VaultFileLayout.paddingQuantum)
            guard UInt64(header.valuesStart) % quantum == 0, header.valuesLength % quantum == 0 else {
                throw VaultError.corrupt("region sizes are not padded to \(quantum) bytes", path: path)
            }
            // A v3 values region always holds the values layer's salt, so it is never empty.
            if layout.hasValuesLayer, header.valuesLength == 0 {
                throw VaultError.corrupt("the values region is missing", path: path)
            }
        }
        return header
    }
}
