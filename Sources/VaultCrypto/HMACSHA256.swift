import FoundationEssentials

/// HMAC-SHA256 (OpenSSL's one-shot `HMAC`).
public enum HMACSHA256 {
    /// The tag length: 32 bytes.
    public static let byteCount = 32

    /// Computes the HMAC-SHA256 of `data` under `key`.
    /// - Returns: The 32-byte authentication code.
    /// - Throws: `CryptoError` when libcrypto fails.
    public static func authenticationCode(for data: some ContiguousBytes, using key: SymmetricKey) throws -> [UInt8] {
        var mac = [UInt8](repeating: 0, count: byteCount)
        try key.bytes.withUnsafeBytes { keyBuffer in
            try data.withUnsafeBytes { input in
                try mac.withUnsafeMutableBytes { try OpenSSLBackend.hmacSHA256(key: keyBuffer, data: input, into: $0) }
            }
        }
        return mac
    }

    /// Checks `code` against the HMAC of `data` in constant time (`CRYPTO_memcmp`).
    /// A code of any length other than 32 bytes never verifies.
    /// - Returns: True when the code is valid.
    /// - Throws: `CryptoError` when libcrypto fails.
    public static func isValidAuthenticationCode(_ code: some ContiguousBytes, for data: some ContiguousBytes,
                                                 using key: SymmetricKey) throws -> Bool {
        let expected = try authenticationCode(for: data, using: key)
        return code.withUnsafeBytes { given in
            expected.withUnsafeBytes { OpenSSLBackend.constantTimeEquals(given, $0) }
        }
    }
}
