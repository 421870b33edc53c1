import FoundationEssentials

/// The key agreement of the Secret Service session algorithm `dh-ietf1024-sha256-aes128-cbc-pkcs7`
/// (freedesktop Secret Service API, "Transfer of Secrets").
///
/// Diffie-Hellman in the second Oakley group of RFC 2409 §6.2 (1024-bit MODP prime, generator 2),
/// then HKDF-SHA256 with no salt and no info to a 16-byte AES-128 key, as libsecret and
/// gnome-keyring compute it: the shared secret goes into HKDF padded with leading zeros to the
/// prime's 128 bytes (their `egg_dh_gen_secret`). The private key stays inside libcrypto
/// (`EVP_PKEY_keygen`, `EVP_PKEY_derive`) and is cleared when the last copy of this value goes.
///
/// 1024 bits is what the specification fixes; it only guards a secret on the user's own
/// session bus against a passive observer (docs/SECURITY.md).
public struct SecretServiceKeyAgreement: Sendable, CustomStringConvertible {
    /// The algorithm name a client passes to `OpenSession`.
    public static let algorithm = "dh-ietf1024-sha256-aes128-cbc-pkcs7"
    /// The derived AES-128 key's length: 16 bytes.
    public static let sessionKeyByteCount = 16

    private let keyPair: OpenSSLBackend.DHKeyPair
    private let encodedPublicKey: [UInt8]

    /// A fresh private key in the group.
    /// - Throws: `CryptoError` when libcrypto fails.
    public init() throws {
        try self.init(keyPair: OpenSSLBackend.dhModp1024Generate())
    }

    /// The key pair of a given private value (big-endian, 0 < x < (p - 1) / 2), for known-answer tests.
    /// - Throws: `CryptoError.unusableKey` for a value outside that range.
    init(privateKey: [UInt8]) throws {
        try self.init(keyPair: privateKey.withUnsafeBytes { try OpenSSLBackend.dhModp1024KeyPair(privateKey: $0) })
    }

    private init(keyPair: OpenSSLBackend.DHKeyPair) throws {
        self.keyPair = keyPair
        self.encodedPublicKey = try OpenSSLBackend.dhModp1024PublicKey(keyPair)
    }

    /// The public value g^x mod p, big-endian and unsigned without leading zeros (1 to 128 bytes),
    /// as gnome-keyring and libsecret send it in `OpenSession`.
    public var publicKey: [UInt8] { encodedPublicKey }

    /// The 16-byte AES-128 session key shared with the peer.
    ///
    /// The peer's value may carry leading zero bytes (libgcrypt and GnuTLS accept them too);
    /// it must be 1 < y < p - 1 and in the subgroup that g = 2 generates, which every honest
    /// peer's g^x is in.
    /// - Parameter peerPublicKey: The peer's public value, big-endian unsigned.
    /// - Returns: HKDF-SHA256(shared secret padded to 128 bytes, no salt, no info), 16 bytes.
    /// - Throws: `CryptoError.unusableKey` for a refused peer value; `CryptoError` when libcrypto fails.
    public func sessionKey(peerPublicKey: [UInt8]) throws -> SecureBytes {
        let sharedSecret = try SecureBytes(count: OpenSSLBackend.dhModp1024ByteCount) { secret in
            try peerPublicKey.withUnsafeBytes { peer in
                try OpenSSLBackend.dhModp1024Derive(keyPair, peer: peer, into: secret)
            }
        }
        return try HKDFSHA256.deriveKey(inputKeyMaterial: sharedSecret, outputByteCount: Self.sessionKeyByteCount)
    }

    /// Names the algorithm and the public value's length; never key material.
    public var description: String {
        "SecretServiceKeyAgreement(\(Self.algorithm), public value \(encodedPublicKey.count) bytes)"
    }
}
