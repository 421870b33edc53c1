import FoundationEssentials
import VaultCrypto

/// The outer layer of a v3 values region: `salt ‖ AES-256-CTR(values ‖ zero padding)`.
///
/// The values inside are each sealed under the value key with AES-256-GCM, as in v2; this layer
/// is made anew on every write, under a key used for that one region (HKDF of the data key with a
/// fresh 32-byte random salt), so the padding is indistinguishable from ciphertext and an
/// unchanged value does not keep its bytes from one copy of the file to the next. It adds no
/// random nonce under any long-lived key: the value key seals only new or changed values.
///
/// It does not authenticate: the values are authenticated one by one (so a damaged value costs
/// that entry alone, as in v2), the padding is checked to be zero once the layer is removed, and
/// everything that says where a value is sits in the authenticated index. See docs/FORMAT.md,
/// "Version 3", and docs/SECURITY.md, "What a file reveals".
enum ValuesLayer {
    /// Covers `plain` (the value ciphertexts and their zero padding) for a new region.
    static func seal(_ plain: [UInt8], dek: SymmetricKey, vaultID: [UInt8]) throws -> [UInt8] {
        let salt = try SecureRandom.bytes(count: VaultFileLayout.valuesLayerSaltByteCount)
        return salt + (try AES256CTR.xor(plain, using: key(dek: dek, vaultID: vaultID, salt: salt),
                                        counterBlock: VaultFileLayout.valuesLayerCounterBlock))
    }

    /// Removes the layer from a region: the value ciphertexts and their padding.
    /// - Throws: `.corrupt` when the region is too short to hold the salt.
    static func open(_ region: ArraySlice<UInt8>, dek: SymmetricKey, vaultID: [UInt8], path: String?) throws -> [UInt8] {
        guard region.count >= VaultFileLayout.valuesLayerOverhead else {
            throw VaultError.corrupt("the values region is too short", path: path)
        }
        let saltEnd = region.startIndex + VaultFileLayout.valuesLayerSaltByteCount
        return try AES256CTR.xor(region[saltEnd...], using: key(dek: dek, vaultID: vaultID, salt: Array(region[..<saltEnd])),
                                 counterBlock: VaultFileLayout.valuesLayerCounterBlock)
    }

    /// The key of one region: HKDF-SHA256(IKM = DEK, salt = vault id ‖ region salt, info = "vault/v3/values-layer").
    private static func key(dek: SymmetricKey, vaultID: [UInt8], salt: [UInt8]) throws -> SymmetricKey {
        SymmetricKey(bytes: try HKDFSHA256.deriveKey(inputKeyMaterial: dek.bytes, salt: vaultID + salt,
                                                     info: VaultFileLayout.valuesLayerInfo, outputByteCount: 32))
    }
}
