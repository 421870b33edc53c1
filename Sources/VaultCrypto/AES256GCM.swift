import FoundationEssentials

/// AES-256-GCM authenticated encryption with a 12-byte nonce and a 16-byte tag.
///
/// Other nonce or tag sizes are refused, and decryption hands out plaintext only
/// after the tag has verified. Uses `EVP_EncryptInit_ex` / `EVP_DecryptFinal_ex`
/// through the C shim.
public enum AES256GCM {
    /// The key length: 32 bytes.
    public static let keyByteCount = 32
    /// The only accepted nonce length: 12 bytes.
    public static let nonceByteCount = 12
    /// The only accepted tag length: 16 bytes.
    public static let tagByteCount = 16

    /// A 12-byte AES-GCM nonce.
    public struct Nonce: Sendable, Hashable, ContiguousBytes {
        /// The nonce bytes (not secret).
        public let bytes: [UInt8]

        /// A fresh random nonce.
        /// - Throws: `CryptoError.randomGenerationFailed`.
        public init() throws { self.bytes = try SecureRandom.bytes(count: AES256GCM.nonceByteCount) }

        /// A nonce from exactly 12 bytes.
        /// - Throws: `CryptoError.invalidNonceSize` for any other length.
        public init(bytes: some Collection<UInt8>) throws {
            guard bytes.count == AES256GCM.nonceByteCount else {
                throw CryptoError.invalidNonceSize(expected: AES256GCM.nonceByteCount, actual: bytes.count)
            }
            self.bytes = Array(bytes)
        }

        /// Calls `body` with the nonce bytes.
        public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
            try bytes.withUnsafeBytes(body)
        }
    }

    /// The output of `seal`: nonce, ciphertext and tag.
    public struct SealedBox: Sendable, Hashable {
        /// The nonce used.
        public let nonce: Nonce
        /// The ciphertext, as long as the plaintext.
        public let ciphertext: [UInt8]
        /// The 16-byte authentication tag.
        public let tag: [UInt8]

        /// Assembles a box from its parts.
        /// - Throws: `CryptoError.invalidTagSize` unless the tag is exactly 16 bytes.
        public init(nonce: Nonce, ciphertext: [UInt8], tag: [UInt8]) throws {
            guard tag.count == AES256GCM.tagByteCount else {
                throw CryptoError.invalidTagSize(expected: AES256GCM.tagByteCount, actual: tag.count)
            }
            self.nonce = nonce
            self.ciphertext = ciphertext
            self.tag = tag
        }

        /// Parses `nonce ‖ ciphertext ‖ tag`.
        /// - Throws: `CryptoError.invalidInputSize` when shorter than 28 bytes.
        public init(combined: some Collection<UInt8>) throws {
            let bytes = Array(combined)
            guard bytes.count >= AES256GCM.nonceByteCount + AES256GCM.tagByteCount else {
                throw CryptoError.invalidInputSize(what: "sealed box", actual: bytes.count)
            }
            let tagStart = bytes.count - AES256GCM.tagByteCount
            try self.init(nonce: Nonce(bytes: bytes[0..<AES256GCM.nonceByteCount]),
                          ciphertext: Array(bytes[AES256GCM.nonceByteCount..<tagStart]),
                          tag: Array(bytes[tagStart...]))
        }

        /// `nonce ‖ ciphertext ‖ tag`.
        public var combined: [UInt8] { nonce.bytes + ciphertext + tag }
    }

    /// Encrypts and authenticates `plaintext`, also authenticating `aad`.
    /// - Parameters:
    ///   - plaintext: The bytes to encrypt.
    ///   - key: A 32-byte key.
    ///   - nonce: A nonce; a fresh random one when nil. Never reuse a nonce with the same key.
    ///   - aad: Associated data that is authenticated but not encrypted.
    /// - Returns: The sealed box.
    /// - Throws: `CryptoError` for a wrong key size or a libcrypto failure.
    public static func seal(_ plaintext: some ContiguousBytes, using key: SymmetricKey, nonce: Nonce? = nil,
                            authenticating aad: some ContiguousBytes = [UInt8]()) throws -> SealedBox {
        try checkKey(key)
        let nonce = try nonce ?? Nonce()
        var tag = [UInt8](repeating: 0, count: tagByteCount)
        let ciphertext: [UInt8] = try plaintext.withUnsafeBytes { plainBuffer in
            guard plainBuffer.count <= Int(Int32.max) else {
                throw CryptoError.invalidInputSize(what: "plaintext", actual: plainBuffer.count)
            }
            // Filled completely by the cipher (or discarded on error): no need to zero it first.
            return try [UInt8](unsafeUninitializedCapacity: plainBuffer.count) { outBuffer, initialized in
                try key.bytes.withUnsafeBytes { keyBuffer in
                    try nonce.withUnsafeBytes { nonceBuffer in
                        try aad.withUnsafeBytes { aadBuffer in
                            try tag.withUnsafeMutableBytes { tagBuffer in
                                try OpenSSLBackend.aesGCMSeal(key: keyBuffer, nonce: nonceBuffer, aad: aadBuffer,
                                                              plaintext: plainBuffer, ciphertext: UnsafeMutableRawBufferPointer(outBuffer),
                                                              tag: tagBuffer)
                            }
                        }
                    }
                }
                initialized = plainBuffer.count
            }
        }
        return try SealedBox(nonce: nonce, ciphertext: ciphertext, tag: tag)
    }

    /// Verifies and decrypts `box`.
    /// - Parameters:
    ///   - box: What `seal` returned.
    ///   - key: The 32-byte key.
    ///   - aad: The associated data given to `seal`.
    /// - Returns: The plaintext in a zeroising buffer; nothing is returned unless the tag verified.
    /// - Throws: `CryptoError.authenticationFailure` for a wrong key, AAD, nonce or altered bytes.
    public static func open(_ box: SealedBox, using key: SymmetricKey,
                            authenticating aad: some ContiguousBytes = [UInt8]()) throws -> SecureBytes {
        try checkKey(key)
        guard box.ciphertext.count <= Int(Int32.max) else {
            throw CryptoError.invalidInputSize(what: "ciphertext", actual: box.ciphertext.count)
        }
        return try SecureBytes(count: box.ciphertext.count) { plainBuffer in
            try key.bytes.withUnsafeBytes { keyBuffer in
                try box.nonce.withUnsafeBytes { nonceBuffer in
                    try aad.withUnsafeBytes { aadBuffer in
                        try box.ciphertext.withUnsafeBytes { cipherBuffer in
                            try box.tag.withUnsafeBytes { tagBuffer in
                                try OpenSSLBackend.aesGCMOpen(key: keyBuffer, nonce: nonceBuffer, aad: aadBuffer,
                                                              ciphertext: cipherBuffer, tag: tagBuffer, plaintext: plainBuffer)
                            }
                        }
                    }
                }
            }
        }
    }

    private static func checkKey(_ key: SymmetricKey) throws {
        guard key.byteCount == keyByteCount else {
            throw CryptoError.invalidKeySize(expected: keyByteCount, actual: key.byteCount)
        }
    }
}
