import FoundationEssentials
import VaultCrypto

/// DPoP proofs (RFC 9449 §4.2): short JWTs, signed ES256 with the client's key, that show the
/// holder of a DPoP-bound token also holds its key, for one HTTP method and URL.
public enum DPoPProof {
    /// A proof for `method` on `url`: header `typ` "dpop+jwt", `alg` ES256 and the public `jwk`;
    /// claims `jti` (128 random bits), `htm`, `htu` (the URL without query and fragment), `iat`,
    /// and `ath` (the access token's SHA-256, base64url) and `nonce` when given.
    /// - Parameters:
    ///   - key: the DPoP key.
    ///   - method: the HTTP method, e.g. "POST".
    ///   - url: the request's URL.
    ///   - accessToken: the token the request presents (resource requests), for `ath`.
    ///   - nonce: the server's `DPoP-Nonce`, when it asked for one.
    ///   - now: the proof's `iat` (the current time unless a test says otherwise).
    /// - Returns: the compact JWS.
    /// - Throws: `CryptoError` when signing fails; `VaultError` `.invalidInput` for a method or
    ///   nonce with characters a header cannot carry.
    public static func make(key: P256SigningKey, method: String, url: URL, accessToken: SecureBytes? = nil,
                            nonce: String? = nil, now: Date = Date()) throws -> String {
        guard !method.isEmpty, method.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw VaultError(.invalidInput, "the HTTP method is not a token (RFC 9110 §9.1)")
        }
        if let nonce, nonce.isEmpty || !nonce.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) {
            throw VaultError(.invalidInput, "the DPoP nonce must be printable ASCII without spaces")
        }
        let header: JSONValue = .object(["typ": .string("dpop+jwt"), "alg": .string("ES256"), "jwk": publicJWK(of: key)])
        var claims: [String: JSONValue] = [
            "jti": .string(Base64URL.encode(try SecureRandom.bytes(count: 16))),
            "htm": .string(method),
            "htu": .string(targetURI(url)),
            "iat": .number(now.timeIntervalSince1970.rounded(.down)),
        ]
        if let accessToken {
            claims["ath"] = .string(Base64URL.encode(try accessToken.withUnsafeBytes { try SHA256.hash($0) }))
        }
        if let nonce { claims["nonce"] = .string(nonce) }
        let signingInput = try encoded(header) + "." + encoded(.object(claims))
        let signature = try key.signature(of: Array(signingInput.utf8))
        return signingInput + "." + Base64URL.encode(signature)
    }

    /// The public key as a JWK (`kty` EC, `crv` P-256, `x`, `y`): what a proof carries.
    public static func publicJWK(of key: P256SigningKey) -> JSONValue {
        .object(["kty": .string("EC"), "crv": .string("P-256"), "x": .string(Base64URL.encode(key.x)), "y": .string(Base64URL.encode(key.y))])
    }

    /// The JWK SHA-256 thumbprint (RFC 7638) of the key: what a server puts in `cnf.jkt`.
    public static func thumbprint(of key: P256SigningKey) throws -> String {
        // The required members in lexicographic order, no whitespace (RFC 7638 §3.3).
        let canonical = "{\"crv\":\"P-256\",\"kty\":\"EC\",\"x\":\"\(Base64URL.encode(key.x))\",\"y\":\"\(Base64URL.encode(key.y))\"}"
        return Base64URL.encode(try SHA256.hash(Array(canonical.utf8)))
    }

    /// `htu`: scheme, host, port and path; no query, no fragment (RFC 9449 §4.2).
    static func targetURI(_ url: URL) -> String {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return url.absoluteString }
        components.query = nil
        components.fragment = nil
        components.user = nil
        components.password = nil
        return components.url?.absoluteString ?? url.absoluteString
    }

    private static func encoded(_ value: JSONValue) throws -> String {
        var writer = JSONWriter(prettyPrinted: false)
        try writer.write(value)
        return Base64URL.encode(writer.bytes)
    }
}
