import CredentialVault
import FoundationEssentials
import VaultCrypto

/// What an ID token must say to be believed (OpenID Connect Core §3.1.3.7, §12.2).
public struct IDTokenExpectations: Sendable {
    /// The issuer exactly as its metadata names it; `iss` must equal it.
    public var issuer: String
    /// The client id; `aud` must contain it, and `azp` must equal it when `aud` has several.
    public var clientID: String
    /// The `nonce` sent in the authorization request (code flow); the token must carry it.
    public var nonce: String?
    /// The access token issued with the ID token; its `at_hash`, when present, must match.
    public var accessToken: SecureBytes?
    /// The first ID token of the session, for one from a refresh: `iss`, `sub` and `aud` must stay.
    public var previous: VerifiedIDToken?
    /// How far the clocks may disagree for `exp` and `iat` (at most 5 minutes).
    public var clockSkew: Duration
    /// The time to check `exp` and `iat` against.
    public var now: Date

    /// The skew allowed unless told otherwise: 2 minutes.
    public static let defaultClockSkew: Duration = .seconds(120)

    /// Creates expectations; `clockSkew` is capped at 5 minutes.
    public init(issuer: String, clientID: String, nonce: String? = nil, accessToken: SecureBytes? = nil,
                previous: VerifiedIDToken? = nil, clockSkew: Duration = IDTokenExpectations.defaultClockSkew, now: Date = Date()) {
        self.issuer = issuer
        self.clientID = clientID
        self.nonce = nonce
        self.accessToken = accessToken
        self.previous = previous
        self.clockSkew = min(max(clockSkew, .zero), .seconds(300))
        self.now = now
    }
}

/// An ID token whose signature and claims were checked: who the user is.
public struct VerifiedIDToken: Sendable, Hashable {
    /// `sub`: the user's stable id at the issuer.
    public let subject: String
    /// `iss`.
    public let issuer: String
    /// `aud`, as a list.
    public let audiences: [String]
    /// `name`, when the token has one.
    public let name: String?
    /// `email`, when the token has one.
    public let email: String?
    /// `exp`.
    public let expiresAt: Date
    /// The algorithm that signed it.
    public let algorithm: JWSAlgorithm
}

/// Checks ID tokens: the signature with the issuer's keys, then the claims. Every refusal is an
/// `OAuthError` of kind `.verificationFailed` that says which check failed, never the token.
enum IDTokenVerifier {
    /// Longest `sub` accepted (OIDC Core §2: at most 255 ASCII characters).
    static let maximumSubjectLength = 255

    /// Verifies `token`.
    /// - Parameter keys: the issuer's keys that may have signed a token with this `kid` and
    ///   algorithm (the client fetches the JWKS again once when none matches).
    static func verify(_ token: SecureBytes, expectations: IDTokenExpectations,
                       keys: (_ keyID: String?, _ algorithm: JWSAlgorithm) async throws -> [JSONWebKeySet.Key]) async throws -> VerifiedIDToken {
        let decoded: DecodedJWT
        do {
            decoded = try JWT.decode(token)
        } catch let error as VaultError {
            throw refused("it is not a signed JWT: \(error.message)")
        }
        let algorithmName = decoded.header["alg"]?.stringValue ?? ""
        guard let algorithm = JWSAlgorithm(rawValue: algorithmName) else {
            let shown = ServerText.sanitized(String(algorithmName.prefix(20)))
            throw refused("its algorithm '\(shown)' is not accepted (RS256, PS256, ES256 and EdDSA are; never none or HMAC)")
        }
        if decoded.header["crit"] != nil {
            throw refused("it has critical header parameters ('crit') that vault does not understand")
        }
        let (signingInput, signature) = try parts(of: token)
        let keyID = decoded.header["kid"]?.stringValue
        let candidates = try await keys(keyID, algorithm)
        guard !candidates.isEmpty else {
            let named = keyID.map { "with key id '\(ServerText.sanitized(String($0.prefix(64))))'" } ?? "for \(algorithm.rawValue)"
            throw refused("the issuer publishes no key \(named) in its JWKS")
        }
        var verified = false
        for candidate in candidates where !verified {
            do {
                verified = try candidate.publicKey.isValidSignature(signature, of: signingInput, algorithm: algorithm)
            } catch is CryptoError {
                continue   // an unusable key of the set, or OpenSSL refusing it: try the next
            }
        }
        guard verified else { throw refused("its signature does not verify with the issuer's key") }
        return try checkClaims(decoded, algorithm: algorithm, expectations: expectations)
    }

    /// The claims checks of OIDC Core §3.1.3.7 (steps 2–4, 9–11) and §12.2.
    static func checkClaims(_ token: DecodedJWT, algorithm: JWSAlgorithm, expectations: IDTokenExpectations) throws -> VerifiedIDToken {
        let claims = token.claims
        guard let issuer = claims["iss"]?.stringValue, issuer == expectations.issuer else {
            throw refused("its issuer (iss) is not '\(ServerText.sanitized(expectations.issuer))'")
        }
        let audiences: [String]
        switch claims["aud"] {
        case .string(let one)?: audiences = [one]
        case .array(let many)?: audiences = many.compactMap(\.stringValue)
        default: audiences = []
        }
        guard audiences.contains(expectations.clientID) else {
            throw refused("its audience (aud) does not include this client")
        }
        let authorizedParty = claims["azp"]?.stringValue
        if audiences.count > 1 || authorizedParty != nil {
            guard authorizedParty == expectations.clientID else {
                throw refused("it names several audiences and its authorized party (azp) is not this client")
            }
        }
        let skew = RetryPolicy.seconds(expectations.clockSkew)
        guard let expiresAt = token.expiresAt else { throw refused("it has no valid expiry (exp)") }
        guard expiresAt.timeIntervalSince(expectations.now) > -skew else {
            throw refused("it expired at \(ISO8601Timestamp.string(from: expiresAt) ?? "?") (exp; \(Int(skew)) s of clock skew allowed)")
        }
        guard let issuedAt = token.issuedAt else { throw refused("it has no valid issue time (iat)") }
        guard issuedAt.timeIntervalSince(expectations.now) <= skew else {
            throw refused("it was issued in the future (iat; \(Int(skew)) s of clock skew allowed)")
        }
        if let nonce = expectations.nonce {
            guard let sent = claims["nonce"]?.stringValue,
                  SecureBytes(copying: Array(sent.utf8)) == SecureBytes(copying: Array(nonce.utf8)) else {
                throw refused("its nonce is not the one this sign-in sent (a replayed or injected ID token)")
            }
        }
        guard let subject = claims["sub"]?.stringValue, !subject.isEmpty, subject.utf8.count <= maximumSubjectLength else {
            throw refused("it has no valid subject (sub)")
        }
        // at_hash binds the ID token to the access token issued with it; checked whenever the
        // caller has that access token (the code, device and refresh answers always do).
        if let expected = claims["at_hash"], let accessToken = expectations.accessToken {
            guard let text = expected.stringValue,
                  try atHashMatches(text, accessToken: accessToken, algorithm: algorithm) else {
                throw refused("its at_hash does not match the access token issued with it")
            }
        }
        if let previous = expectations.previous {
            guard issuer == previous.issuer, subject == previous.subject, Set(audiences) == Set(previous.audiences) else {
                throw refused("the refreshed ID token names another issuer, subject or audience than the session's (OIDC Core §12.2)")
            }
        }
        return VerifiedIDToken(subject: subject, issuer: issuer, audiences: audiences, name: claims["name"]?.stringValue,
                               email: claims["email"]?.stringValue, expiresAt: expiresAt, algorithm: algorithm)
    }

    /// `at_hash` (OIDC Core §3.1.3.6): the left half of the access token's hash, SHA-256 for the
    /// 256-bit algorithms and SHA-512 for EdDSA (Ed25519), base64url.
    static func atHashMatches(_ encoded: String, accessToken: SecureBytes, algorithm: JWSAlgorithm) throws -> Bool {
        let digest = try accessToken.withUnsafeBytes { bytes in
            algorithm == .edDSA ? try SHA512.hash(bytes) : try SHA256.hash(bytes)
        }
        guard let given = Array(encoded.utf8).withUnsafeBytes({ Base64URL.decode($0) }) else { return false }
        return SecureBytes(copying: given) == SecureBytes(copying: Array(digest.prefix(digest.count / 2)))
    }

    /// The signing input (header.payload) and the decoded signature.
    private static func parts(of token: SecureBytes) throws -> ([UInt8], [UInt8]) {
        try token.withUnsafeBytes { bytes in
            guard let lastDot = bytes.lastIndex(of: UInt8(ascii: ".")),
                  let signature = Base64URL.decode(UnsafeRawBufferPointer(rebasing: bytes[(lastDot + 1)...])), !signature.isEmpty else {
                throw refused("it has no signature")
            }
            return (Array(bytes[..<lastDot]), signature)
        }
    }

    static func refused(_ detail: String) -> OAuthError {
        OAuthError(.verificationFailed, endpoint: "ID token", detail: "refused: " + detail)
    }
}
