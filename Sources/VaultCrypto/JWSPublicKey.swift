import FoundationEssentials

/// The JWS signature algorithms vault verifies (RFC 7518 §3, RFC 8037 §3.1).
///
/// `none` and the HMAC algorithms are deliberately absent: an ID token signed with them cannot
/// prove that the issuer made it.
public enum JWSAlgorithm: String, Sendable, Hashable, CaseIterable {
    /// RSASSA-PKCS1-v1_5 with SHA-256; RSA keys of at least 2048 bits.
    case rs256 = "RS256"
    /// RSASSA-PSS with SHA-256, MGF1-SHA-256 and a 32-byte salt; RSA keys of at least 2048 bits.
    case ps256 = "PS256"
    /// ECDSA on P-256 with SHA-256; the signature is the raw 64-byte r‖s.
    case es256 = "ES256"
    /// Ed25519 (RFC 8037); the signature is 64 bytes.
    case edDSA = "EdDSA"
}

/// A public key as a JWK carries it, for checking JWS signatures through OpenSSL.
public struct JWSPublicKey: Sendable, Hashable {
    enum Material: Sendable, Hashable {
        case rsa(modulus: [UInt8], exponent: [UInt8])
        case p256(x: [UInt8], y: [UInt8])
        case ed25519(publicKey: [UInt8])
    }

    let material: Material

    /// An RSA public key from its modulus and exponent (big-endian, as in a JWK's `n` and `e`).
    /// Its size is checked when it is used: under 2048 bits is refused.
    public static func rsa(modulus: [UInt8], exponent: [UInt8]) -> JWSPublicKey {
        JWSPublicKey(material: .rsa(modulus: modulus, exponent: exponent))
    }

    /// A P-256 public key from its coordinates (32 bytes each, as in a JWK's `x` and `y`).
    public static func p256(x: [UInt8], y: [UInt8]) -> JWSPublicKey {
        JWSPublicKey(material: .p256(x: x, y: y))
    }

    /// An Ed25519 public key (32 bytes, a JWK's `x` for `crv` "Ed25519").
    public static func ed25519(_ publicKey: [UInt8]) -> JWSPublicKey {
        JWSPublicKey(material: .ed25519(publicKey: publicKey))
    }

    /// The algorithms this key can check: RS256 and PS256 for RSA, ES256 for P-256, EdDSA for Ed25519.
    public var algorithms: Set<JWSAlgorithm> {
        switch material {
        case .rsa: [.rs256, .ps256]
        case .p256: [.es256]
        case .ed25519: [.edDSA]
        }
    }

    /// Whether `signature` is a valid `algorithm` signature of `message` under this key.
    ///
    /// A signature of the wrong length (an ECDSA one in DER, say) is simply not valid.
    /// - Throws: `CryptoError.unusableKey` when the key does not fit the algorithm, is an RSA
    ///   key under 2048 bits, or is a point off the curve; a libcrypto failure.
    public func isValidSignature(_ signature: [UInt8], of message: some ContiguousBytes,
                                 algorithm: JWSAlgorithm) throws -> Bool {
        guard algorithms.contains(algorithm) else {
            throw CryptoError.unusableKey("a \(kindName) key cannot check an \(algorithm.rawValue) signature")
        }
        let (a, b): ([UInt8], [UInt8])
        switch material {
        case .rsa(let modulus, let exponent): (a, b) = (modulus, exponent)
        case .p256(let x, let y): (a, b) = (x, y)
        case .ed25519(let publicKey): (a, b) = (publicKey, [])
        }
        let code: Int32 = switch algorithm {
        case .rs256: OpenSSLBackend.jwsRS256
        case .ps256: OpenSSLBackend.jwsPS256
        case .es256: OpenSSLBackend.jwsES256
        case .edDSA: OpenSSLBackend.jwsEdDSA
        }
        let check = try a.withUnsafeBytes { aBuffer in
            try b.withUnsafeBytes { bBuffer in
                try message.withUnsafeBytes { messageBuffer in
                    try signature.withUnsafeBytes { signatureBuffer in
                        try OpenSSLBackend.jwsVerify(algorithm: code, a: aBuffer, b: bBuffer, message: messageBuffer,
                                                     signature: signatureBuffer)
                    }
                }
            }
        }
        switch check {
        case .valid: return true
        case .invalid: return false
        case .keyRefused: throw CryptoError.unusableKey(refusal)
        }
    }

    private var kindName: String {
        switch material {
        case .rsa: "RSA"
        case .p256: "P-256"
        case .ed25519: "Ed25519"
        }
    }

    private var refusal: String {
        switch material {
        case .rsa: "the RSA key is not between 2048 and 16384 bits, or its exponent is unusable"
        case .p256: "the P-256 key is not a point on the curve (x and y must be 32 bytes each)"
        case .ed25519: "the Ed25519 key is not 32 bytes"
        }
    }
}
