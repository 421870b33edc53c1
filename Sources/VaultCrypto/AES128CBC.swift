import FoundationEssentials

/// AES-128-CBC with PKCS#7 padding, the cipher of the Secret Service session algorithm
/// `dh-ietf1024-sha256-aes128-cbc-pkcs7` (through `EVP_aes_128_cbc` with padding on).
///
/// CBC does not authenticate: a wrong padding is reported, but altered bytes can also decrypt
/// with a valid padding. Use it only where the protocol requires it; vault's own storage uses
/// AES-256-GCM.
public enum AES128CBC {
    /// The key length: 16 bytes.
    public static let keyByteCount = 16
    /// The IV (and block) length: 16 bytes.
    public static let ivByteCount = 16

    /// Encrypts and pads `plaintext`.
    /// - Parameters:
    ///   - key: A 16-byte key.
    ///   - iv: A 16-byte IV; never reuse one with the same key.
    ///   - plaintext: Any number of bytes, empty included.
    /// - Returns: The ciphertext: the plaintext's length rounded up to the next multiple of 16
    ///   (a whole block of padding when it already was one).
    /// - Throws: `CryptoError.invalidKeySize` / `.invalidNonceSize` for a wrong size; `CryptoError` when libcrypto fails.
    public static func encrypt(key: SecureBytes, iv: [UInt8], plaintext: SecureBytes) throws -> [UInt8] {
        try checkSizes(key: key, iv: iv)
        guard plaintext.count <= Int(Int32.max) - ivByteCount else {
            throw CryptoError.invalidInputSize(what: "plaintext", actual: plaintext.count)
        }
        let capacity = plaintext.count + ivByteCount
        return try [UInt8](unsafeUninitializedCapacity: capacity) { output, initialized in
            initialized = 0
            let written = try key.withUnsafeBytes { keyBuffer in
                try iv.withUnsafeBytes { ivBuffer in
                    try plaintext.withUnsafeBytes { plainBuffer in
                        try OpenSSLBackend.aes128CBCEncrypt(key: keyBuffer, iv: ivBuffer, plaintext: plainBuffer,
                                                            into: UnsafeMutableRawBufferPointer(output))
                    }
                }
            }
            initialized = written
        }
    }

    /// Decrypts `ciphertext` and removes its padding.
    /// - Parameters:
    ///   - key: The 16-byte key.
    ///   - iv: The 16-byte IV used to encrypt.
    ///   - ciphertext: A positive multiple of 16 bytes.
    /// - Returns: The plaintext in a zeroising buffer; nothing is returned when the padding is wrong.
    /// - Throws: `CryptoError.invalidPadding` for a bad length or padding (wrong key or IV, or
    ///   altered bytes); `CryptoError.invalidKeySize` / `.invalidNonceSize` for a wrong size.
    public static func decrypt(key: SecureBytes, iv: [UInt8], ciphertext: [UInt8]) throws -> SecureBytes {
        try checkSizes(key: key, iv: iv)
        guard ciphertext.count <= Int(Int32.max) - ivByteCount else {
            throw CryptoError.invalidInputSize(what: "ciphertext", actual: ciphertext.count)
        }
        var length = 0
        // Decrypted into a private buffer (wiped by the shim on failure, by SecureBytes when
        // dropped), then only the unpadded part is copied out.
        let padded = try SecureBytes(count: ciphertext.count + ivByteCount) { output in
            length = try key.withUnsafeBytes { keyBuffer in
                try iv.withUnsafeBytes { ivBuffer in
                    try ciphertext.withUnsafeBytes { cipherBuffer in
                        try OpenSSLBackend.aes128CBCDecrypt(key: keyBuffer, iv: ivBuffer, ciphertext: cipherBuffer, into: output)
                    }
                }
            }
        }
        return padded.slice(0..<length)
    }

    private static func checkSizes(key: SecureBytes, iv: [UInt8]) throws {
        guard key.count == keyByteCount else { throw CryptoError.invalidKeySize(expected: keyByteCount, actual: key.count) }
        guard iv.count == ivByteCount else { throw CryptoError.invalidNonceSize(expected: ivByteCount, actual: iv.count) }
    }
}
