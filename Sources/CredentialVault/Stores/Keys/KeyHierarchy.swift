import VaultCrypto

/// The keys derived from one data key (DEK): one per purpose, via HKDF-SHA256
/// with the vault id as salt and a distinct label each.
struct DataKeys: Sendable {
    let dek: SymmetricKey
    /// Header MAC and index keys of v1 files (read only).
    let headerMACV1: SymmetricKey
    let indexV1: SymmetricKey
    /// Header MAC and index keys of v2 and v3 files.
    let headerMACV2: SymmetricKey
    let indexV2: SymmetricKey
    /// The value key (the same in every version).
    let value: SymmetricKey
    /// v3: the key of the entries' kept earlier values (`HistorySection`).
    let history: SymmetricKey

    /// The header MAC key of a layout.
    func headerMAC(_ layout: HeaderLayout) -> SymmetricKey { layout.majorVersion == 1 ? headerMACV1 : headerMACV2 }
    /// The index key of a layout.
    func index(_ layout: HeaderLayout) -> SymmetricKey { layout.majorVersion == 1 ? indexV1 : indexV2 }

    init(dek: SymmetricKey, vaultID: [UInt8]) throws {
        self.dek = dek
        func derive(_ info: [UInt8]) throws -> SymmetricKey {
            SymmetricKey(bytes: try HKDFSHA256.deriveKey(inputKeyMaterial: dek.bytes, salt: vaultID, info: info, outputByteCount: 32))
        }
        headerMACV1 = try derive(VaultFileLayout.headerMACInfoV1)
        indexV1 = try derive(VaultFileLayout.indexKeyInfoV1)
        headerMACV2 = try derive(VaultFileLayout.headerMACInfoV2)
        indexV2 = try derive(VaultFileLayout.indexKeyInfoV2)
        value = try derive(VaultFileLayout.valueKeyInfo)
        history = try derive(VaultFileLayout.historyInfo)
    }
}

/// Turns user keys into key-encryption keys, and wraps / unwraps data keys.
package enum KeyHierarchy {
    /// Derives the KEK for `slot` from `key`. For passphrase slots the policy is
    /// checked first, so no scrypt work happens for a file outside it.
    /// - Throws: `.wrongKey` when the key kind does not match the slot, `.kdfOutsidePolicy`.
    package static func deriveKEK(key: VaultKey, kind: KeySlotKind, parameters: Scrypt.Parameters, salt: [UInt8],
                          policy: KDFPolicy, path: String?,
                          keyMaterialInfo: [UInt8] = VaultFileLayout.kekInfo) throws -> SymmetricKey {
        guard key.slotKind == kind else {
            throw VaultError(.wrongKey, "this vault is opened with \(kind.userFacingName), not \(key.slotKind.userFacingName)",
                             path: path,
                             fix: kind == .scrypt ? "open it with its passphrase instead of a key file"
                                                  : "open it with its key file instead of a passphrase",
                             topic: kind == .scrypt ? .needsPassphrase : .needsKeyFile)
        }
        try key.validate()
        switch key {
        case let .passphrase(passphrase):
            try policy.check(parameters, path: path)
            let derived = try Scrypt.deriveKey(password: passphrase, salt: salt, parameters: parameters,
                                               outputByteCount: 32, bounds: policy.scryptBounds)
            return SymmetricKey(bytes: derived)
        case let .keyMaterial(material):
            let derived = try HKDFSHA256.deriveKey(inputKeyMaterial: material, salt: salt,
                                                   info: keyMaterialInfo, outputByteCount: 32)
            return SymmetricKey(bytes: derived)
        }
    }

    /// Makes a fresh slot for `key`: new salt, the policy's default parameters, the DEK wrapped under the new KEK.
    /// The wrap needs the header's AAD, so this returns the KEK and the caller seals with `wrap`.
    package static func newSlotParameters(for key: VaultKey, policy: KDFPolicy) throws -> (kind: KeySlotKind, parameters: Scrypt.Parameters, salt: [UInt8]) {
        try key.validate()
        let salt = try SecureRandom.bytes(count: VaultFileLayout.saltByteCount)
        switch key.slotKind {
        case .scrypt: return (.scrypt, policy.defaultParameters, salt)
        case .keyMaterial: return (.keyMaterial, Scrypt.Parameters(logN: 0, r: 0, p: 0), salt)
        }
    }

    /// Wraps the DEK under the KEK with AES-256-GCM, authenticating `aad` (magic through salt).
    static func wrap(dek: SymmetricKey, kek: SymmetricKey, aad: [UInt8]) throws -> (nonce: [UInt8], ciphertext: [UInt8], tag: [UInt8]) {
        let box = try AES256GCM.seal(dek.bytes, using: kek, authenticating: aad)
        return (box.nonce.bytes, box.ciphertext, box.tag)
    }

    /// Unwraps the DEK. An authentication failure means the key is wrong (or the slot was altered).
    /// - Throws: `.wrongKey`.
    static func unwrap(slot: KeySlot, kek: SymmetricKey, aad: [UInt8], path: String?) throws -> SymmetricKey {
        do {
            let box = try AES256GCM.SealedBox(nonce: AES256GCM.Nonce(bytes: slot.wrapNonce), ciphertext: slot.wrappedDEK, tag: slot.wrapTag)
            return SymmetricKey(bytes: try AES256GCM.open(box, using: kek, authenticating: aad))
        } catch let error as CryptoError where error.isAuthenticationFailure {
            var wrong = VaultError.wrongKey
            if let path { wrong = VaultError(wrong.code, wrong.message, path: path, fix: wrong.fix) }
            throw wrong
        }
    }
}
