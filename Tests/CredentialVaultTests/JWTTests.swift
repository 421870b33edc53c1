import Foundation
import Testing
@testable import CredentialVault
import VaultCrypto

@Suite("JWT")
struct JWTTests {
    /// Unpadded base64url of `text` (RFC 7515 §2).
    private static func segment(_ text: String) -> String {
        Data(text.utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    private static let header = segment(#"{"alg":"RS256","typ":"JWT"}"#)
    private static let signature = segment("fake-signature-not-verified")

    /// A three-part token whose payload is `payload` (raw JSON text).
    private static func token(payload: String) -> String {
        "\(header).\(segment(payload)).\(signature)"
    }

    private static func bytes(_ token: String) -> SecureBytes {
        SecureBytes(copying: Array(token.utf8))
    }

    private static func decodeError(_ token: String) -> VaultError? {
        do {
            _ = try JWT.decode(bytes(token))
            return nil
        } catch let error as VaultError {
            return error
        } catch {
            Issue.record("unexpected error type \(type(of: error))")
            return nil
        }
    }

    // MARK: Reading claims

    /// RFC 7519 §3.1: the example JWT (HS256; its CRLFs inside the JSON are whitespace).
    @Test func decodesTheRFC7519Example() throws {
        let token = "eyJ0eXAiOiJKV1QiLA0KICJhbGciOiJIUzI1NiJ9"
            + ".eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ"
            + ".dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
        let decoded = try JWT.decode(Self.bytes(token))
        #expect(decoded.header["alg"] == "HS256")
        #expect(decoded.header["typ"] == "JWT")
        #expect(decoded.issuer == "joe")
        #expect(decoded.claims["http://example.com/is_root"] == true)
        #expect(decoded.expiresAt == Date(timeIntervalSince1970: 1_300_819_380))
        #expect(JWT.expiry(of: Self.bytes(token)) == Date(timeIntervalSince1970: 1_300_819_380))
    }

    @Test func readsStandardClaims() throws {
        let token = Self.token(payload: #"{"sub":"user-1","iss":"https://auth.example.com/","iat":1700000000,"nbf":1700000000,"exp":1700003600}"#)
        let decoded = try JWT.decode(Self.bytes(token))
        #expect(decoded.subject == "user-1")
        #expect(decoded.issuer == "https://auth.example.com/")
        #expect(decoded.issuedAt == Date(timeIntervalSince1970: 1_700_000_000))
        #expect(decoded.notBefore == Date(timeIntervalSince1970: 1_700_000_000))
        #expect(decoded.expiresAt == Date(timeIntervalSince1970: 1_700_003_600))
    }

    @Test func expiryKeepsFractionalSeconds() {
        let token = Self.token(payload: #"{"exp":1700000000.25}"#)
        #expect(JWT.expiry(of: Self.bytes(token)) == Date(timeIntervalSince1970: 1_700_000_000.25))
    }

    @Test func expiryAcceptsZeroAndTheLastSecondOfYear9999() {
        #expect(JWT.expiry(of: Self.bytes(Self.token(payload: #"{"exp":0}"#))) == Date(timeIntervalSince1970: 0))
        #expect(JWT.expiry(of: Self.bytes(Self.token(payload: #"{"exp":253402300799}"#)))
            == Date(timeIntervalSince1970: 253_402_300_799))
    }

    @Test(arguments: [
        #"{}"#,                          // no exp
        #"{"exp":null}"#,
        #"{"exp":"1700000000"}"#,        // a string is not a NumericDate
        #"{"exp":true}"#,
        #"{"exp":[1700000000]}"#,
        #"{"exp":{"value":1}}"#,
        #"{"exp":-1}"#,                  // before 1970
        #"{"exp":-0.5}"#,
        #"{"exp":253402300800}"#,        // year 10000
        #"{"exp":1e300}"#,
        #"{"exp":1e400}"#,               // not even a Double: the payload is rejected
    ])
    func expiryIsNilForAnExpThatIsNotANumericDate(payload: String) throws {
        #expect(JWT.expiry(of: Self.bytes(Self.token(payload: payload))) == nil)
    }

    @Test func unsecuredTokenWithEmptySignatureIsReadable() throws {
        let token = "\(Self.segment(#"{"alg":"none"}"#)).\(Self.segment(#"{"exp":1700000000}"#))."
        #expect(JWT.expiry(of: Self.bytes(token)) == Date(timeIntervalSince1970: 1_700_000_000))
    }

    // MARK: Malformed tokens

    @Test func rejectsTheWrongNumberOfParts() throws {
        let payload = Self.segment(#"{"exp":1700000000}"#)
        let twoParts = "\(Self.header).\(payload)"
        let fourParts = "\(Self.header).\(payload).\(Self.signature).\(Self.signature)"
        let jwe = "\(Self.header).\(payload).\(payload).\(payload).\(Self.signature)"
        for token in [twoParts, fourParts, jwe, "no-dots-at-all", "..."] {
            let error = try #require(Self.decodeError(token), "should reject \(token)")
            #expect(error.code == .invalidInput)
            #expect(error.message.contains("parts"))
            #expect(JWT.expiry(of: Self.bytes(token)) == nil)
        }
        #expect(Self.decodeError(jwe)?.message.contains("JWE") == true)
    }

    @Test func rejectsAnEmptyToken() throws {
        let error = try #require(Self.decodeError(""))
        #expect(error.code == .invalidInput)
        #expect(error.message.contains("empty"))
        #expect(JWT.expiry(of: .empty) == nil)
    }

    @Test func rejectsBadBase64URL() throws {
        let payload = Self.segment(#"{"exp":1700000000}"#)
        let cases = [
            "\(Self.header).\(payload)=.\(Self.signature)",           // padding
            "\(Self.header)==.\(payload).\(Self.signature)",
            "\(Self.header).\(payload.replacingOccurrences(of: "e", with: "+")).\(Self.signature)",  // base64, not base64url
            "\(Self.header).\(payload)/.\(Self.signature)",
            "\(Self.header).\(payload) .\(Self.signature)",           // whitespace
            "\(Self.header).AAAAA.\(Self.signature)",                  // 5 characters: 1 mod 4
            "\(Self.header).\(payload).sig=",                         // signature padding
            "\(Self.header).\(payload).sig!",
        ]
        for token in cases {
            let error = try #require(Self.decodeError(token), "should reject \(token)")
            #expect(error.code == .invalidInput)
            #expect(error.message.contains("base64url"), "\(error.message)")
            #expect(JWT.expiry(of: Self.bytes(token)) == nil)
        }
    }

    @Test func rejectsPartsThatAreNotJSONObjects() throws {
        let cases: [(token: String, words: String)] = [
            (Self.token(payload: "not json"), "payload is not valid JSON"),
            (Self.token(payload: #"{"exp":1700000000"#), "payload is not valid JSON"),
            (Self.token(payload: "[1700000000]"), "payload is an array, not a JSON object"),
            (Self.token(payload: "1700000000"), "payload is a number, not a JSON object"),
            (Self.token(payload: #""exp""#), "payload is a string, not a JSON object"),
            ("\(Self.segment("{alg}")).\(Self.segment("{}")).\(Self.signature)", "header is not valid JSON"),
            ("\(Self.header)..\(Self.signature)", "payload is empty"),
            (".\(Self.segment("{}")).\(Self.signature)", "header is empty"),
        ]
        for (token, words) in cases {
            let error = try #require(Self.decodeError(token), "should reject \(token)")
            #expect(error.code == .invalidInput)
            #expect(error.message.contains(words), "\(error.message)")
            #expect(JWT.expiry(of: Self.bytes(token)) == nil)
        }
    }

    @Test func rejectsOverlongTokens() throws {
        let payload = Self.segment(#"{"pad":""# + String(repeating: "x", count: JWT.maximumLength) + #""}"#)
        let error = try #require(Self.decodeError("\(Self.header).\(payload).\(Self.signature)"))
        #expect(error.message.contains("bytes long"))
    }

    @Test func errorMessagesNeverContainTheToken() throws {
        let secretPayload = Self.segment(#"{"sub":"secret-subject-0123456789","exp":"#)
        let tokens = [
            "\(Self.header).\(secretPayload)",                        // 2 parts
            "\(Self.header).\(secretPayload).\(Self.signature).x",    // 4 parts
            "\(Self.header).\(secretPayload)=.\(Self.signature)",     // padding
            "\(Self.header).\(secretPayload).\(Self.signature)",      // truncated JSON
            "\(Self.header).\(Self.segment("[\"secret-subject-0123456789\"]")).\(Self.signature)",
        ]
        for token in tokens {
            let error = try #require(Self.decodeError(token))
            let shown = error.description + error.message + (error.fix ?? "") + "\(error)"
            #expect(!shown.contains(secretPayload.prefix(12)))
            #expect(!shown.contains(Self.header))
            #expect(!shown.contains(Self.signature))
            #expect(!shown.contains("secret-subject"))
        }
    }
}
