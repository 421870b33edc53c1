import FoundationEssentials

/// HMAC-SHA512 (OpenSSL's one-shot `HMAC` with `EVP_sha512`).
public enum HMACSHA512 {
    /// The tag length: 64 bytes.
    public static let byteCount = 64

    /// Computes the HMAC-SHA512 of `data` under `key`.
    /// - Returns: The 64-byte authentication code.
    /// - Throws: `CryptoError` when libcrypto fails.
    public static func authenticationCode(for data: some ContiguousBytes, using key: SymmetricKey) throws -> [UInt8] {
        var mac = [UInt8](repeating: 0, count: byteCount)
        try key.bytes.withUnsafeBytes { keyBuffer in
            try data.withUnsafeBytes { input in
                try mac.withUnsafeMutableBytes { try OpenSSLBackend.hmac(.sha512, key: keyBuffer, data: input, into: $0) }
            }
        }
        return mac
    }
}
