import FoundationEssentials

/// A P-256 key pair that signs ES256 (DPoP proofs, RFC 9449), made by OpenSSL's generator.
///
/// The private scalar lives in a `SecureBytes` (wiped when the last copy goes); keep it sealed
/// in the vault through `rawRepresentation` and never print it. `description` shows no key.
public struct P256SigningKey: Sendable, CustomStringConvertible {
    /// The private scalar d ‖ x ‖ y, 96 bytes.
    private let storage: SecureBytes

    /// The public point's x coordinate (32 bytes, a JWK's `x`).
    public let x: [UInt8]
    /// The public point's y coordinate (32 bytes, a JWK's `y`).
    public let y: [UInt8]

    /// A new key pair.
    /// - Throws: a libcrypto failure.
    public init() throws {
        var x = [UInt8](repeating: 0, count: 32), y = [UInt8](repeating: 0, count: 32)
        let storage = try SecureBytes(count: 96) { buffer in
            try x.withUnsafeMutableBytes { xBuffer in
                try y.withUnsafeMutableBytes { yBuffer in
                    try OpenSSLBackend.p256Generate(d: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<32]),
                                                    x: xBuffer, y: yBuffer)
                }
            }
            UnsafeMutableRawBufferPointer(rebasing: buffer[32..<96]).copyBytes(from: x + y)
        }
        self.storage = storage
        self.x = x
        self.y = y
    }

    /// The key stored by `rawRepresentation`: d ‖ x ‖ y, 32 bytes each.
    /// - Throws: `CryptoError.invalidKeySize` for another length; `.unusableKey` (at the first
    ///   signature) when the parts do not belong together.
    public init(rawRepresentation: SecureBytes) throws {
        guard rawRepresentation.count == 96 else { throw CryptoError.invalidKeySize(expected: 96, actual: rawRepresentation.count) }
        storage = rawRepresentation
        (x, y) = rawRepresentation.withUnsafeBytes { (Array($0[32..<64]), Array($0[64..<96])) }
    }

    /// The key for storage: d ‖ x ‖ y (96 bytes). Secret: seal it, never show it.
    public var rawRepresentation: SecureBytes { storage }

    /// The public key, to check this key's signatures.
    public var publicKey: JWSPublicKey { .p256(x: x, y: y) }

    /// An ES256 signature of `message`: the raw 64-byte r‖s that JWS uses (RFC 7518 §3.4).
    /// - Throws: `CryptoError.unusableKey` when d does not match (x, y); a libcrypto failure.
    public func signature(of message: some ContiguousBytes) throws -> [UInt8] {
        try storage.withUnsafeBytes { key in
            try message.withUnsafeBytes { messageBuffer in
                try [UInt8](unsafeUninitializedCapacity: 64) { output, initialized in
                    try OpenSSLBackend.es256Sign(d: UnsafeRawBufferPointer(rebasing: key[0..<32]),
                                                 x: UnsafeRawBufferPointer(rebasing: key[32..<64]),
                                                 y: UnsafeRawBufferPointer(rebasing: key[64..<96]),
                                                 message: messageBuffer, signature: UnsafeMutableRawBufferPointer(output))
                    initialized = 64
                }
            }
        }
    }

    /// "P256SigningKey(redacted)".
    public var description: String { "P256SigningKey(redacted)" }
}
