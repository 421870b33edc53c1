import VaultCrypto

/// Encodes and decodes whole v1 vault files. Decoding follows the open order of
/// the format: parse → KDF policy → KEK → unwrap DEK → header MAC → index → bindings.
enum VaultFileCodec {
    /// Decodes `file`. `kekProvider` derives the KEK for the slot (and may cache it).
    /// - Throws: `VaultError` `.corrupt`, `.unsupportedVersion`, `.kdfOutsidePolicy`, `.wrongKey`, `.tampered`.
    static func decode(_ file: [UInt8], path: String?,
                       kekProvider: (KeySlot) throws -> SymmetricKey,
                       dataKeysProvider: (SymmetricKey, [UInt8]) throws -> DataKeys) throws -> (VaultImage, DataKeys, SymmetricKey) {
        let header = try VaultFileHeader.parse(file, path: path)
        let kek = try kekProvider(header.slot)
        let dek = try KeyHierarchy.unwrap(slot: header.slot, kek: kek, aad: header.wrapAAD(), path: path)
        let keys = try dataKeysProvider(dek, header.vaultID)

        guard try HMACSHA256.isValidAuthenticationCode(header.mac, for: header.macedBytes(), using: keys.headerMAC) else {
            throw VaultError.tampered(region: "header", path: path)
        }

        let indexStart = VaultFileLayout.headerByteCount
        let indexEnd = indexStart + VaultFileLayout.nonceByteCount + Int(header.indexCiphertextLength) + VaultFileLayout.tagByteCount
        let tagStart = indexEnd - VaultFileLayout.tagByteCount
        let indexBox = try AES256GCM.SealedBox(
            nonce: AES256GCM.Nonce(bytes: file[indexStart..<(indexStart + VaultFileLayout.nonceByteCount)]),
            ciphertext: Array(file[(indexStart + VaultFileLayout.nonceByteCount)..<tagStart]),
            tag: Array(file[tagStart..<indexEnd]))
        let plainIndex: SecureBytes
        do {
            plainIndex = try AES256GCM.open(indexBox, using: keys.index,
                                            authenticating: Array(file[0..<VaultFileLayout.headerByteCount]))
        } catch let error as CryptoError where error.isAuthenticationFailure {
            throw VaultError.tampered(region: "entry index", path: path)
        }
        let values = file[indexEnd...]  // entries keep slices of it: no per-entry copies
        // The index plaintext (names, labels, metadata) is wiped once decoded.
        var indexBytes = plainIndex.withUnsafeBytes { Array($0) }
        defer { SecureWipe.wipe(&indexBytes) }
        let entries = try IndexCodec.decode(indexBytes, vaultID: header.vaultID, generation: header.generation,
                                            values: values, path: path)
        let image = VaultImage(minorVersion: header.minorVersion, vaultID: header.vaultID, slot: header.slot,
                               generation: header.generation, entries: entries)
        return (image, keys, kek)
    }

    /// Encodes `image` into file bytes, re-wrapping the DEK under `kek` and sealing the index with fresh nonces.
    static func encode(_ image: VaultImage, keys: DataKeys, kek: SymmetricKey) throws -> [UInt8] {
        // Never write an index that readers would refuse: strictly ascending by bytes.
        for (previous, next) in zip(image.entries, image.entries.dropFirst()) where !(previous.key < next.key) {
            preconditionFailure("vault entries out of byte order: the in-memory image is inconsistent")
        }
        var header = VaultFileHeader(minorVersion: VaultFileLayout.minorVersion, vaultID: image.vaultID, slot: image.slot,
                                     generation: image.generation, indexCiphertextLength: 0, valuesLength: 0, mac: [])
        let wrapped = try KeyHierarchy.wrap(dek: keys.dek, kek: kek, aad: header.wrapAAD())
        header.slot.wrapNonce = wrapped.nonce
        header.slot.wrappedDEK = wrapped.ciphertext
        header.slot.wrapTag = wrapped.tag

        var plainIndex = IndexCodec.encode(image.entries, vaultID: image.vaultID, generation: image.generation)
        defer { SecureWipe.wipe(&plainIndex) }
        let valuesLength = image.entries.reduce(0) { $0 + $1.ciphertext.count }
        let unpadded = VaultFileLayout.headerByteCount + VaultFileLayout.nonceByteCount + plainIndex.count
            + VaultFileLayout.tagByteCount + valuesLength
        let quantum = VaultFileLayout.paddingQuantum
        plainIndex.append(contentsOf: repeatElement(0, count: (quantum - unpadded % quantum) % quantum))
        guard unpadded <= VaultLimits.maximumFileBytes else {
            throw VaultError(.invalidInput, "the vault would exceed \(VaultLimits.maximumFileBytes) bytes",
                             fix: "remove entries or store large files elsewhere")
        }

        header.indexCiphertextLength = UInt32(plainIndex.count)
        header.valuesLength = UInt64(valuesLength)
        header.mac = try HMACSHA256.authenticationCode(for: header.macedBytes(), using: keys.headerMAC)
        let headerBytes = try header.encoded()

        let indexBox = try AES256GCM.seal(plainIndex, using: keys.index, authenticating: headerBytes)
        var file = [UInt8]()
        file.reserveCapacity(unpadded + quantum)
        file.append(contentsOf: headerBytes)
        file.append(contentsOf: indexBox.nonce.bytes)
        file.append(contentsOf: indexBox.ciphertext)
        file.append(contentsOf: indexBox.tag)
        for entry in image.entries { file.append(contentsOf: entry.ciphertext) }
        return file
    }
}
