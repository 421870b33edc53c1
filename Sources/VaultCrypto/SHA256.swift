import FoundationEssentials

/// SHA-256 (`EVP_Digest` with `EVP_sha256`).
public enum SHA256 {
    /// The digest length: 32 bytes.
    public static let byteCount = 32

    /// Hashes `data`.
    /// - Returns: The 32-byte digest.
    /// - Throws: `CryptoError` when libcrypto fails.
    public static func hash(_ data: some ContiguousBytes) throws -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: byteCount)
        try data.withUnsafeBytes { input in
            try digest.withUnsafeMutableBytes { try OpenSSLBackend.sha256(input, into: $0) }
        }
        return digest
    }
}
