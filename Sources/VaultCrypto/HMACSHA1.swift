import FoundationEssentials

/// HMAC-SHA1 (OpenSSL's one-shot `HMAC` with `EVP_sha1`).
public enum HMACSHA1 {
    /// The tag length: 20 bytes.
    public static let byteCount = 20

    /// Computes the HMAC-SHA1 of `data` under `key`.
    /// - Returns: The 20-byte authentication code.
    /// - Throws: `CryptoError` when libcrypto fails.
    public static func authenticationCode(for data: some ContiguousBytes, using key: SymmetricKey) throws -> [UInt8] {
        var mac = [UInt8](repeating: 0, count: byteCount)
        try key.bytes.withUnsafeBytes { keyBuffer in
            try data.withUnsafeBytes { input in
                try mac.withUnsafeMutableBytes { try OpenSSLBackend.hmac(.sha1, key: keyBuffer, data: input, into: $0) }
            }
        }
        return mac
    }
}
