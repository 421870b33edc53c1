import FoundationEssentials

/// HKDF with SHA-256 (RFC 5869), through `EVP_KDF "HKDF"`.
public enum HKDFSHA256 {
    /// The largest output RFC 5869 allows: 255 × 32 bytes.
    public static let maximumOutputByteCount = 255 * 32

    /// Extract-then-expand.
    /// - Parameters:
    ///   - inputKeyMaterial: The secret input (IKM).
    ///   - salt: Optional salt; empty means a string of zeros (RFC 5869 §2.2).
    ///   - info: Context and application-specific information.
    ///   - outputByteCount: 1 to 8,160 bytes.
    /// - Returns: The output keying material in a zeroising buffer.
    /// - Throws: `CryptoError.parameterOutOfBounds` for a bad length; `CryptoError` when libcrypto fails.
    public static func deriveKey(inputKeyMaterial: some ContiguousBytes, salt: some ContiguousBytes = [UInt8](),
                                 info: some ContiguousBytes = [UInt8](), outputByteCount: Int) throws -> SecureBytes {
        try checkOutput(outputByteCount)
        return try run(.extractAndExpand, key: inputKeyMaterial, salt: salt, info: info, outputByteCount: outputByteCount)
    }

    /// The extract step: returns the 32-byte pseudorandom key (PRK).
    /// - Throws: `CryptoError` when libcrypto fails.
    public static func extract(inputKeyMaterial: some ContiguousBytes, salt: some ContiguousBytes = [UInt8]()) throws -> SecureBytes {
        try run(.extractOnly, key: inputKeyMaterial, salt: salt, info: [UInt8](), outputByteCount: 32)
    }

    /// The expand step from a PRK.
    /// - Throws: `CryptoError.parameterOutOfBounds` for a bad length; `CryptoError` when libcrypto fails.
    public static func expand(pseudoRandomKey: some ContiguousBytes, info: some ContiguousBytes = [UInt8](),
                              outputByteCount: Int) throws -> SecureBytes {
        try checkOutput(outputByteCount)
        return try run(.expandOnly, key: pseudoRandomKey, salt: [UInt8](), info: info, outputByteCount: outputByteCount)
    }

    private static func checkOutput(_ count: Int) throws {
        guard (1...maximumOutputByteCount).contains(count) else {
            throw CryptoError.parameterOutOfBounds("outputByteCount", "must be 1...\(maximumOutputByteCount), got \(count)")
        }
    }

    private static func run(_ mode: OpenSSLBackend.HKDFMode, key: some ContiguousBytes, salt: some ContiguousBytes,
                            info: some ContiguousBytes, outputByteCount: Int) throws -> SecureBytes {
        try SecureBytes(count: outputByteCount) { out in
            try key.withUnsafeBytes { keyBuffer in
                try salt.withUnsafeBytes { saltBuffer in
                    try info.withUnsafeBytes { infoBuffer in
                        try OpenSSLBackend.hkdfSHA256(mode: mode, key: keyBuffer, salt: saltBuffer, info: infoBuffer, into: out)
                    }
                }
            }
        }
    }
}
