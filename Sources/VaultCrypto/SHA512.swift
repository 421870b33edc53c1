import FoundationEssentials

/// SHA-512 (`EVP_Digest` with `EVP_sha512`): the hash of an EdDSA ID token's `at_hash`.
public enum SHA512 {
    /// The digest length: 64 bytes.
    public static let byteCount = 64

    /// Hashes `data`.
    /// - Returns: The 64-byte digest.
    /// - Throws: `CryptoError` when libcrypto fails.
    public static func hash(_ data: some ContiguousBytes) throws -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: byteCount)
        try data.withUnsafeBytes { input in
            try digest.withUnsafeMutableBytes { try OpenSSLBackend.sha512(input, into: $0) }
        }
        return digest
    }
}
