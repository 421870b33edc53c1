import FoundationEssentials
import VaultCrypto

/// The header and claims of a JWT, read without checking its signature.
public struct DecodedJWT: Sendable, Hashable {
    /// The JOSE header, e.g. `["alg": "RS256", "kid": "…"]`.
    public let header: [String: JSONValue]
    /// The claims set, e.g. `exp`, `sub`, `iss`.
    public let claims: [String: JSONValue]

    /// Creates a decoded token from its parts.
    public init(header: [String: JSONValue], claims: [String: JSONValue]) {
        self.header = header
        self.claims = claims
    }

    /// The `exp` claim as a date, or nil when absent or not a valid NumericDate.
    public var expiresAt: Date? { JWT.numericDate(claims["exp"]) }
    /// The `iat` claim as a date, or nil when absent or not a valid NumericDate.
    public var issuedAt: Date? { JWT.numericDate(claims["iat"]) }
    /// The `nbf` claim as a date, or nil when absent or not a valid NumericDate.
    public var notBefore: Date? { JWT.numericDate(claims["nbf"]) }
    /// The `sub` claim when it is a string.
    public var subject: String? { claims["sub"]?.stringValue }
    /// The `iss` claim when it is a string.
    public var issuer: String? { claims["iss"]?.stringValue }
}

/// Reads JWTs (RFC 7519) in JWS compact form to learn when they expire.
///
/// The signature is NOT verified, and cannot be: the vault holds no issuer keys. That is
/// the resource server's job when the token is presented. The vault only reads `exp` to
/// decide when to refresh, so a forged `exp` can at worst make it refresh too early or
/// too late, and a server still rejects an expired token. Never use these claims to
/// decide who the user is.
public enum JWT {
    /// Longer tokens are refused before decoding; real ones are a few KiB.
    public static let maximumLength = 256 * 1024

    /// Splits, base64url-decodes and parses a JWS compact JWT: `header.payload.signature`.
    ///
    /// Exactly three dot-separated parts are accepted; an encrypted JWE (five parts) is
    /// refused because its claims are not readable. The signature part may be empty (an
    /// unsecured JWT) but must be base64url; it is not checked.
    /// - Parameter token: the token's ASCII bytes.
    /// - Returns: the header and the claims.
    /// - Throws: `VaultError` `.invalidInput` when the token is empty, too long, does not
    ///   have three parts, a part is not unpadded base64url, or the header or payload is
    ///   not a JSON object. The message never contains the token.
    public static func decode(_ token: SecureBytes) throws -> DecodedJWT {
        try token.withUnsafeBytes { bytes in try decode(bytes) }
    }

    /// The `exp` claim of `token`, or nil when the token is not a readable JWT or `exp` is
    /// missing or not a valid NumericDate (see `decode(_:)` for what is readable).
    ///
    /// A NumericDate (RFC 7519 §2) is a JSON number of seconds since 1970-01-01T00:00:00Z,
    /// possibly fractional. Negative, non-finite and later-than-year-9999 values, and
    /// strings or Booleans, give nil.
    /// - Parameter token: the token's ASCII bytes.
    /// - Returns: when the token expires, if it says.
    public static func expiry(of token: SecureBytes) -> Date? {
        guard let decoded = try? decode(token) else { return nil }
        return decoded.expiresAt
    }

    /// A NumericDate as a `Date`: a finite, non-negative number up to the end of year 9999.
    static func numericDate(_ value: JSONValue?) -> Date? {
        guard case .number(let seconds)? = value, seconds.isFinite, seconds >= 0,
              seconds <= ISO8601Timestamp.latest
        else { return nil }
        return Date(timeIntervalSince1970: seconds)
    }

    // MARK: - Decoding

    private static func decode(_ token: UnsafeRawBufferPointer) throws -> DecodedJWT {
        guard !token.isEmpty else { throw invalid("the token is empty") }
        guard token.count <= maximumLength else {
            throw invalid("the token is \(token.count) bytes long, more than the \(maximumLength) a JWT may have here")
        }
        let parts = split(token)
        guard parts.count == 3 else {
            let hint = parts.count == 5 ? "; it looks like an encrypted JWE, whose claims cannot be read" : ""
            throw invalid("the token is not a JWT: it has \(parts.count) parts separated by '.', expected 3\(hint)")
        }
        let header = try object(in: UnsafeRawBufferPointer(rebasing: token[parts[0]]), part: "header")
        let claims = try object(in: UnsafeRawBufferPointer(rebasing: token[parts[1]]), part: "payload")
        guard Base64URL.isWellFormed(UnsafeRawBufferPointer(rebasing: token[parts[2]])) else {
            throw invalid("the JWT signature is not unpadded base64url")
        }
        return DecodedJWT(header: header, claims: claims)
    }

    /// The ranges between dots.
    private static func split(_ token: UnsafeRawBufferPointer) -> [Range<Int>] {
        var parts: [Range<Int>] = []
        var start = 0
        for index in token.indices where token[index] == UInt8(ascii: ".") {
            parts.append(start..<index)
            start = index + 1
        }
        parts.append(start..<token.count)
        return parts
    }

    private static func object(in encoded: UnsafeRawBufferPointer, part: String) throws -> [String: JSONValue] {
        guard !encoded.isEmpty else { throw invalid("the JWT \(part) is empty") }
        guard let json = Base64URL.decode(encoded) else {
            throw invalid("the JWT \(part) is not unpadded base64url")
        }
        let value: JSONValue
        do {
            value = try JSONParser.parse(json)
        } catch {
            throw invalid("the JWT \(part) is not valid JSON (\(error))")
        }
        guard case .object(let members) = value else {
            throw invalid("the JWT \(part) is \(value.kindDescription), not a JSON object")
        }
        return members
    }

    private static func invalid(_ message: String) -> VaultError {
        VaultError(.invalidInput, message)
    }
}
