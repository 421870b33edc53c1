/// Cryptographically secure random bytes from OpenSSL's DRBG (`RAND_bytes`).
///
/// A failure of the generator is an error, never a zero-filled buffer.
public enum SecureRandom {
    /// Returns `count` random bytes in a zeroising buffer, for keys.
    /// - Throws: `CryptoError.randomGenerationFailed`.
    public static func secureBytes(count: Int) throws -> SecureBytes {
        try SecureBytes(count: count) { try OpenSSLBackend.randomFill($0) }
    }

    /// Returns `count` random bytes for values that are not secret (nonces, salts, ids).
    /// - Throws: `CryptoError.randomGenerationFailed`.
    public static func bytes(count: Int) throws -> [UInt8] {
        var result = [UInt8](repeating: 0, count: count)
        try result.withUnsafeMutableBytes { try OpenSSLBackend.randomFill($0) }
        return result
    }
}
