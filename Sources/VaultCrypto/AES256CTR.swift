import FoundationEssentials

/// AES-256 in counter mode (NIST SP 800-38A) with a 16-byte initial counter block: a key
/// stream XORed over the input, so the same call encrypts and decrypts.
///
/// It does not authenticate anything. Use it only under a key made for one message, for bytes
/// that are authenticated by other means (the vault file's values layer: every value inside is
/// sealed with AES-256-GCM, and the padding is checked). Everything else uses `AES256GCM`.
public enum AES256CTR {
    /// The key length: 32 bytes.
    public static let keyByteCount = 32
    /// The only accepted initial counter block length: 16 bytes.
    public static let counterBlockByteCount = 16

    /// `input` XORed with the key stream of `key` from `counterBlock` on.
    /// - Throws: `CryptoError.invalidKeySize`, `.invalidNonceSize` for a counter block that is not
    ///   16 bytes, `.invalidInputSize` past 2^31 − 1 bytes, or a libcrypto failure.
    public static func xor(_ input: some ContiguousBytes, using key: SymmetricKey, counterBlock: [UInt8]) throws -> [UInt8] {
        guard key.byteCount == keyByteCount else { throw CryptoError.invalidKeySize(expected: keyByteCount, actual: key.byteCount) }
        guard counterBlock.count == counterBlockByteCount else {
            throw CryptoError.invalidNonceSize(expected: counterBlockByteCount, actual: counterBlock.count)
        }
        return try input.withUnsafeBytes { inputBuffer in
            guard inputBuffer.count <= Int(Int32.max) else { throw CryptoError.invalidInputSize(what: "input", actual: inputBuffer.count) }
            return try [UInt8](unsafeUninitializedCapacity: inputBuffer.count) { output, initialized in
                try key.bytes.withUnsafeBytes { keyBuffer in
                    try counterBlock.withUnsafeBytes { counterBuffer in
                        try OpenSSLBackend.aesCTRXor(key: keyBuffer, counterBlock: counterBuffer, input: inputBuffer,
                                                     output: UnsafeMutableRawBufferPointer(output))
                    }
                }
                initialized = inputBuffer.count
            }
        }
    }
}
