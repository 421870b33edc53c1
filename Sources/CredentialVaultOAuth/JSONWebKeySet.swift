import CredentialVault
import VaultCrypto

/// An issuer's signing keys (RFC 7517 §5), as published at its `jwks_uri`: the keys vault
/// checks ID tokens with.
///
/// Keys it cannot use are left out rather than refused: an encryption key (`use` "enc"), a
/// curve other than P-256 or Ed25519, an unknown `kty`, a member that is not base64url.
public struct JSONWebKeySet: Sendable {
    /// One usable signing key.
    public struct Key: Sendable, Hashable {
        /// The key id (`kid`), when the set gives one.
        public let id: String?
        /// The one algorithm the key is for (`alg`), when the set says.
        public let algorithm: JWSAlgorithm?
        /// The public key.
        public let publicKey: JWSPublicKey
    }

    /// The usable signing keys, in the set's order.
    public let keys: [Key]

    /// Reads a JWK Set document; nil when it is not a JSON object with a `keys` array.
    public static func parse(_ body: [UInt8]) -> JSONWebKeySet? {
        guard case .object(let document)? = try? JSONValue(parsing: body), case .array(let entries)? = document["keys"] else {
            return nil
        }
        return JSONWebKeySet(keys: entries.compactMap(key))
    }

    /// The keys that may have signed a token with `keyID` and `algorithm`: those with that `kid`
    /// (every key when the token names none), of the algorithm's key type, and whose `alg`, when
    /// set, is the token's.
    func candidates(keyID: String?, algorithm: JWSAlgorithm) -> [Key] {
        keys.filter { key in
            (keyID == nil || key.id == keyID) && key.publicKey.algorithms.contains(algorithm)
                && (key.algorithm == nil || key.algorithm == algorithm)
        }
    }

    private static func key(_ entry: JSONValue) -> Key? {
        guard case .object(let members) = entry, let type = members["kty"]?.stringValue else { return nil }
        if let use = members["use"]?.stringValue, use != "sig" { return nil }
        if case .array(let operations)? = members["key_ops"], !operations.contains(.string("verify")) { return nil }
        func bytes(_ name: String) -> [UInt8]? {
            guard let text = members[name]?.stringValue, !text.isEmpty else { return nil }
            return Array(text.utf8).withUnsafeBytes { Base64URL.decode($0) }
        }
        let publicKey: JWSPublicKey
        switch (type, members["crv"]?.stringValue) {
        case ("RSA", _):
            guard let modulus = bytes("n"), let exponent = bytes("e") else { return nil }
            publicKey = .rsa(modulus: modulus, exponent: exponent)
        case ("EC", "P-256"):
            guard let x = bytes("x"), let y = bytes("y") else { return nil }
            publicKey = .p256(x: x, y: y)
        case ("OKP", "Ed25519"):
            guard let x = bytes("x") else { return nil }
            publicKey = .ed25519(x)
        default:
            return nil
        }
        var algorithm: JWSAlgorithm?
        if let name = members["alg"]?.stringValue {
            // A key meant for an algorithm vault does not check (HS256, RS512, …) is not used at all.
            guard let known = JWSAlgorithm(rawValue: name), publicKey.algorithms.contains(known) else { return nil }
            algorithm = known
        }
        return Key(id: members["kid"]?.stringValue, algorithm: algorithm, publicKey: publicKey)
    }
}
