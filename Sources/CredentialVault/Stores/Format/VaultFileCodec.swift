import VaultCrypto

/// Decodes v1, v2 and v3 vault files and encodes v2 and v3. Decoding follows the open order of
/// the format: parse → KDF policy → KEK → unwrap DEK → header MAC → index → (v3) values layer off → bindings.
enum VaultFileCodec {
    /// Decodes `file`. `kekProvider` derives the KEK for the slot (and may cache it); it sees the
    /// parsed header first, so it can refuse parameters before any KDF work.
    /// - Throws: `VaultError` `.corrupt`, `.unsupportedVersion`, `.kdfOutsidePolicy`, `.wrongKey`, `.tampered`.
    static func decode(_ file: [UInt8], path: String?,
                       kekProvider: (KeySlot) throws -> SymmetricKey,
                       dataKeysProvider: (SymmetricKey, [UInt8]) throws -> DataKeys) throws -> (VaultImage, DataKeys, SymmetricKey) {
        let header = try VaultFileHeader.parse(file, path: path)
        let layout = header.layout
        let kek = try kekProvider(header.slot)
        let dek = try KeyHierarchy.unwrap(slot: header.slot, kek: kek, aad: header.wrapAAD(), path: path)
        let keys = try dataKeysProvider(dek, header.vaultID)

        guard try HMACSHA256.isValidAuthenticationCode(header.mac, for: header.macedBytes(), using: keys.headerMAC(layout)) else {
            throw VaultError.tampered(region: "header", path: path)
        }

        let indexStart = layout.indexStart
        let indexEnd = header.valuesStart
        let tagStart = indexEnd - VaultFileLayout.tagByteCount
        let indexBox = try AES256GCM.SealedBox(
            nonce: AES256GCM.Nonce(bytes: file[indexStart..<(indexStart + VaultFileLayout.nonceByteCount)]),
            ciphertext: Array(file[(indexStart + VaultFileLayout.nonceByteCount)..<tagStart]),
            tag: Array(file[tagStart..<indexEnd]))
        let plainIndex: SecureBytes
        do {
            plainIndex = try AES256GCM.open(indexBox, using: keys.index(layout), authenticating: Array(file[0..<layout.headerByteCount]))
        } catch let error as CryptoError where error.isAuthenticationFailure {
            throw VaultError.tampered(region: "entry index", path: path)
        }
        // Entries keep slices of the values: no per-entry copies.
        let values = layout.hasValuesLayer
            ? try ValuesLayer.open(file[indexEnd...], dek: keys.dek, vaultID: header.vaultID, path: path)[...]
            : file[indexEnd...]
        // The index plaintext (names, labels, metadata) is wiped once decoded.
        var indexBytes = plainIndex.withUnsafeBytes { Array($0) }
        defer { SecureWipe.wipe(&indexBytes) }
        let contents: IndexContents
        if layout.majorVersion == 1 {
            let entries = try IndexCodec.decode(indexBytes, vaultID: header.vaultID, generation: header.generation, values: values, path: path)
            contents = IndexContents(generation: header.generation, stateKey: nil, entries: entries)
        } else {
            contents = try IndexCodec.decodeV2(indexBytes, vaultID: header.vaultID, valuesRegion: values,
                                               regionOverhead: layout.valuesLayerOverhead,
                                               hasHistory: header.flags & VaultFileLayout.headerFlagHistory != 0, path: path)
        }
        guard (header.flags & VaultFileLayout.headerFlagAttributes != 0) == contents.entries.contains(where: { !$0.attributes.isEmpty }) else {
            throw VaultError.tampered(region: "entry index (the header's attribute flag does not match the entries)", path: path)
        }
        guard (header.flags & VaultFileLayout.headerFlagNewerKinds != 0) == contents.entries.contains(where: \.kind.isNewerThanOriginalKinds) else {
            throw VaultError.tampered(region: "entry index (the header's newer-kinds flag does not match the entries)", path: path)
        }
        let image = VaultImage(majorVersion: layout.majorVersion, minorVersion: header.minorVersion, vaultID: header.vaultID,
                               slot: header.slot, generation: contents.generation, entries: contents.entries,
                               stateKey: contents.stateKey, history: contents.history)
        return (image, keys, kek)
    }

    /// The error of a write past `VaultLimits.maximumFileBytes`. With kept earlier versions (which
    /// count toward the cap) its topic lets a front end name the command that keeps fewer.
    static func fileCapError(keepsVersions: Bool) -> VaultError {
        keepsVersions
            ? VaultError(.invalidInput, "the vault would exceed \(VaultLimits.maximumFileBytes) bytes (earlier versions kept as history count toward it)",
                         fix: "keep fewer earlier versions per entry, remove entries, or store large files elsewhere", topic: .fileCapWithHistory)
            : VaultError(.invalidInput, "the vault would exceed \(VaultLimits.maximumFileBytes) bytes", fix: "remove entries or store large files elsewhere")
    }

    /// The header flags of a file with these contents: history, attributes and newer kinds exist in v3 only.
    private static func headerFlags(layout: HeaderLayout, hasHistory: Bool, entries: [SealedEntry]) -> UInt16 {
        guard layout.majorVersion >= 3 else { return 0 }
        var flags: UInt16 = hasHistory ? VaultFileLayout.headerFlagHistory : 0
        if entries.contains(where: { !$0.attributes.isEmpty }) { flags |= VaultFileLayout.headerFlagAttributes }
        if entries.contains(where: \.kind.isNewerThanOriginalKinds) { flags |= VaultFileLayout.headerFlagNewerKinds }
        return flags
    }

    /// Encodes `image` as a v3 file when it was read from one (or is new), else as v2: re-wrapping the
    /// DEK under `kek`, sealing the index with fresh nonces and (v3) the values layer under a fresh key.
    /// An image without a state key (read from v1) gets a new random one.
    static func encode(_ image: VaultImage, keys: DataKeys, kek: SymmetricKey) throws -> [UInt8] {
        // Never write an index that readers would refuse: strictly ascending by bytes.
        for (previous, next) in zip(image.entries, image.entries.dropFirst()) where !(previous.key < next.key) {
            preconditionFailure("vault entries out of byte order: the in-memory image is inconsistent")
        }
        let layout = image.majorVersion >= 3 ? HeaderLayout.v3 : HeaderLayout.v2
        // History only in v3 (`VaultTransaction` keeps none in a v2 file), and only when there is some.
        let history = layout.majorVersion >= 3 ? image.history.flatMap { $0.isEmpty ? nil : $0 } : nil
        var header = VaultFileHeader(layout: layout, minorVersion: VaultFileLayout.minorVersion, vaultID: image.vaultID,
                                     slot: image.slot, generation: 0, indexCiphertextLength: 0, valuesLength: 0, mac: [],
                                     flags: Self.headerFlags(layout: layout, hasHistory: history != nil, entries: image.entries))
        let wrapped = try KeyHierarchy.wrap(dek: keys.dek, kek: kek, aad: header.wrapAAD())
        header.slot.wrapNonce = wrapped.nonce
        header.slot.wrappedDEK = wrapped.ciphertext
        header.slot.wrapTag = wrapped.tag

        let stateKey = try image.stateKey ?? SecureRandom.bytes(count: VaultFileLayout.stateKeyByteCount)
        var plainIndex = IndexCodec.encodeV2(image.entries, vaultID: image.vaultID, generation: image.generation, stateKey: stateKey,
                                             history: history)
        defer { SecureWipe.wipe(&plainIndex) }
        plainIndex.append(contentsOf: repeatElement(0, count: IndexCodec.paddedV2Length(unpadded: plainIndex.count) - plainIndex.count))
        let valuesLength = image.entries.reduce(0) { $0 + $1.ciphertext.count }
        let valuesRegion = layout.valuesRegionByteCount(valuesLength: valuesLength)
        let total = layout.headerByteCount + VaultFileLayout.nonceByteCount + plainIndex.count + VaultFileLayout.tagByteCount + valuesRegion
        guard total <= VaultLimits.maximumFileBytes else {
            throw Self.fileCapError(keepsVersions: history?.records.contains { !$0.versions.isEmpty } ?? false)
        }

        header.indexCiphertextLength = UInt32(plainIndex.count)
        header.valuesLength = UInt64(valuesRegion)
        header.mac = try HMACSHA256.authenticationCode(for: header.macedBytes(), using: keys.headerMAC(layout))
        let headerBytes = try header.encoded()

        let indexBox = try AES256GCM.seal(plainIndex, using: keys.index(layout), authenticating: headerBytes)
        var file = [UInt8]()
        file.reserveCapacity(total)
        file.append(contentsOf: headerBytes)
        file.append(contentsOf: indexBox.nonce.bytes)
        file.append(contentsOf: indexBox.ciphertext)
        file.append(contentsOf: indexBox.tag)
        // The values and their zero padding; in v3 under the values layer, which adds its salt.
        let paddedValuesLength = valuesRegion - layout.valuesLayerOverhead
        var values = [UInt8]()
        values.reserveCapacity(paddedValuesLength)
        for entry in image.entries { values.append(contentsOf: entry.ciphertext) }
        values.append(contentsOf: repeatElement(0, count: paddedValuesLength - valuesLength))
        file.append(contentsOf: layout.hasValuesLayer ? try ValuesLayer.seal(values, dek: keys.dek, vaultID: image.vaultID) : values)
        return file
    }
}
