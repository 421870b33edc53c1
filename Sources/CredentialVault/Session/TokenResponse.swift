import FoundationEssentials
import VaultCrypto

/// An OAuth 2.0 error response (RFC 6749 §5.2), e.g. `{"error": "invalid_grant"}`.
public struct OAuthErrorResponse: Sendable, Hashable, CustomStringConvertible {
    /// The error code, e.g. "invalid_grant", "invalid_client", "invalid_scope".
    public var error: String
    /// The server's human-readable explanation, if any.
    public var errorDescription: String?
    /// A page about the error, if the server gave one.
    public var errorURI: String?

    /// Creates an error response.
    public init(error: String, errorDescription: String? = nil, errorURI: String? = nil) {
        self.error = error
        self.errorDescription = errorDescription
        self.errorURI = errorURI
    }

    /// True for "invalid_grant": the refresh token (or code) is expired, revoked or spent,
    /// so refreshing again cannot help and the user must sign in again.
    public var isInvalidGrant: Bool { error == "invalid_grant" }

    /// "invalid_grant: The refresh token has expired".
    public var description: String {
        errorDescription.map { "\(error): \($0)" } ?? error
    }
}

/// Reads the JSON body of an OAuth 2.0 token endpoint response (RFC 6749 §5.1).
///
/// A namespace: the result of parsing is `Credentials`.
public enum TokenResponse {
    /// Larger bodies are refused before parsing.
    public static let maximumLength = 1 << 20

    /// Parses a successful token response into credentials.
    ///
    /// Members read:
    /// - `access_token` (required, non-empty string), `token_type` (required, non-empty string);
    /// - `expires_in`: seconds from `receivedAt`, a number or a numeric string such as "3600"
    ///   (some servers quote it);
    /// - `expires_at`: seconds since 1970, number or numeric string (not in RFC 6749, but common);
    /// - `refresh_token`, `id_token`: optional strings; an empty string counts as absent;
    /// - `scope`: a space-separated string (or, leniently, an array of strings).
    /// Other members are ignored. `null` counts as absent everywhere.
    ///
    /// `expiresAt` is taken from the first of: `receivedAt + expires_in`; `expires_at`; the
    /// `exp` claim of the access token when it is a JWT; otherwise nil ("no expiry known",
    /// see `Credentials.expiresAt`). The ID token's `exp` is deliberately NOT used: it says
    /// how long the ID token may be used to establish a session, not how long the access
    /// token is accepted, and the two often differ.
    ///
    /// The token strings pass through ordinary Swift strings while parsing; only the result
    /// holds them in zeroising buffers. The input is not wiped: that is the caller's buffer.
    /// - Parameters:
    ///   - json: the response body, UTF-8 JSON.
    ///   - receivedAt: when the response arrived; `expires_in` counts from here.
    /// - Returns: the credentials.
    /// - Throws: `VaultError` `.invalidInput` when the body is not a JSON object, a required
    ///   member is missing or empty, a member has the wrong type, an expiry is negative or
    ///   beyond year 9999, or the body is an OAuth error response (the message gives its
    ///   code; read the details with `parseError(_:)`). Messages never contain token values.
    public static func parse(_ json: some ContiguousBytes, receivedAt: Date) throws -> Credentials {
        let members = try topLevelObject(json)
        do throws(JSONShapeError) {
            return try credentials(from: members, receivedAt: receivedAt)
        } catch {
            throw invalid("the token response is invalid: \(error)")
        }
    }

    /// Recognises an OAuth 2.0 error response: a JSON object with a string `error`.
    /// - Parameter json: the response body.
    /// - Returns: the error, or nil when the body is not an error response.
    public static func parseError(_ json: some ContiguousBytes) -> OAuthErrorResponse? {
        guard json.withUnsafeBytes({ $0.count }) <= maximumLength,
              case .object(let members)? = try? JSONParser.parse(json),
              case .string(let error)? = members["error"], !error.isEmpty
        else { return nil }
        return OAuthErrorResponse(error: error, errorDescription: members["error_description"]?.stringValue,
                                  errorURI: members["error_uri"]?.stringValue)
    }

    // MARK: - Parsing

    private static func topLevelObject(_ json: some ContiguousBytes) throws -> JSONObjectReader {
        let count = json.withUnsafeBytes { $0.count }
        guard count <= maximumLength else {
            throw invalid("the token response is \(count) bytes long, more than the \(maximumLength) accepted")
        }
        let value: JSONValue
        do {
            value = try JSONParser.parse(json)
        } catch {
            throw invalid("the token response is not valid JSON (\(error))")
        }
        guard case .object = value, let reader = try? JSONObjectReader(value, path: "") else {
            throw invalid("the token response is \(value.kindDescription), not a JSON object")
        }
        if reader.optional("access_token") == nil, case .string(let code)? = reader.optional("error") {
            let shown = TerminalText.escaped(code.count <= 64 ? code : String(code.prefix(64)) + "…")
            throw invalid("the server sent an OAuth error response (\(shown)) instead of tokens")
        }
        return reader
    }

    private static func credentials(from response: JSONObjectReader,
                                    receivedAt: Date) throws(JSONShapeError) -> Credentials {
        let accessToken = try nonEmptyString(response, "access_token")
        let tokenType = try nonEmptyString(response, "token_type")
        let refreshToken = try response.optionalString("refresh_token").flatMap { $0.isEmpty ? nil : secure($0) }
        let idToken = try response.optionalString("id_token").flatMap { $0.isEmpty ? nil : secure($0) }
        let scopes = try scopeList(response)
        let access = secure(accessToken)

        var expiresAt: Date?
        if let lifetime = try seconds(response, "expires_in") {
            let expiry = receivedAt.timeIntervalSince1970 + lifetime
            guard let date = JWT.numericDate(.number(expiry)) else {
                throw JSONShapeError(path: "expires_in", problem: "puts the expiry beyond year 9999")
            }
            expiresAt = date
        } else if let timestamp = try seconds(response, "expires_at") {
            guard let date = JWT.numericDate(.number(timestamp)) else {
                throw JSONShapeError(path: "expires_at", problem: "is beyond year 9999")
            }
            expiresAt = date
        } else {
            expiresAt = JWT.expiry(of: access)
        }
        return Credentials(accessToken: access, refreshToken: refreshToken, idToken: idToken,
                           tokenType: tokenType, scopes: scopes, expiresAt: expiresAt, issuedAt: receivedAt)
    }

    private static func nonEmptyString(_ response: JSONObjectReader, _ key: String) throws(JSONShapeError) -> String {
        let value = try response.string(key)
        guard !value.isEmpty else { throw JSONShapeError(path: key, problem: "is empty") }
        return value
    }

    /// A non-negative number of seconds, given as a JSON number or a decimal string.
    private static func seconds(_ response: JSONObjectReader, _ key: String) throws(JSONShapeError) -> Double? {
        let number: Double
        switch response.optional(key) {
        case nil:
            return nil
        case .number(let value)?:
            number = value
        case .string(let text)?:
            guard let value = decimal(text) else {
                throw JSONShapeError(path: key, problem: "is a string that is not a number of seconds")
            }
            number = value
        case let other?:
            throw JSONShapeError(path: key, problem: "must be a number of seconds, not \(other.kindDescription)")
        }
        guard number.isFinite, number >= 0 else {
            throw JSONShapeError(path: key, problem: "must not be negative")
        }
        return number
    }

    /// Plain decimal digits with an optional fraction ("3600", "3600.5"); nothing `Double(_:)`
    /// would also take, such as "inf", "0x10" or "1e3".
    private static func decimal(_ text: String) -> Double? {
        var sawDigit = false
        var sawPoint = false
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): sawDigit = true
            case UInt8(ascii: ".") where !sawPoint && sawDigit: sawPoint = true; sawDigit = false
            default: return nil
            }
        }
        guard sawDigit else { return nil }
        return Double(text)
    }

    private static func scopeList(_ response: JSONObjectReader) throws(JSONShapeError) -> [String] {
        switch response.optional("scope") {
        case nil:
            return []
        case .string(let text)?:
            return text.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        case .array(let elements)?:
            var scopes: [String] = []
            for element in elements {
                guard case .string(let scope) = element else {
                    throw JSONShapeError(path: "scope", problem: "must hold only strings, not \(element.kindDescription)")
                }
                if !scope.isEmpty { scopes.append(scope) }
            }
            return scopes
        case let other?:
            throw JSONShapeError(path: "scope", problem: "must be a space-separated string, not \(other.kindDescription)")
        }
    }

    /// Copies a token's UTF-8 bytes into a zeroising buffer.
    private static func secure(_ token: String) -> SecureBytes {
        var copy = token
        return copy.withUTF8 { SecureBytes(copying: UnsafeRawBufferPointer($0)) }
    }

    private static func invalid(_ message: String) -> VaultError {
        VaultError(.invalidInput, message)
    }
}
