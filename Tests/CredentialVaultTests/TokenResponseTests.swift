import Foundation
import Testing
@testable import CredentialVault
import VaultCrypto

@Suite("TokenResponse")
struct TokenResponseTests {
    /// 2026-01-01T00:00:00Z, the `iat` of the fixture JWTs.
    private static let receivedAt = Date(timeIntervalSince1970: 1_767_225_600)
    /// The `exp` of the fixture access token: 2026-01-01T01:00:00Z.
    private static let accessTokenExp = Date(timeIntervalSince1970: 1_767_229_200)

    /// A committed fixture from Fixtures/token-responses (fake tokens; never regenerated).
    private static func fixture(_ name: String) throws -> [UInt8] {
        let root = try #require(Bundle.module.url(forResource: "Fixtures", withExtension: nil))
        return Array(try Data(contentsOf: root.appendingPathComponent("token-responses/\(name).json")))
    }

    /// The string value of `key` in a fixture, to compare token bytes with.
    private static func fixtureString(_ name: String, _ key: String) throws -> String {
        try #require(try JSONValue(parsing: fixture(name))[key]?.stringValue)
    }

    private static func bytes(_ text: String) -> SecureBytes {
        SecureBytes(copying: Array(text.utf8))
    }

    private static func parse(_ json: String) throws -> Credentials {
        try TokenResponse.parse(Array(json.utf8), receivedAt: receivedAt)
    }

    /// The `VaultError` that parsing `json` throws; fails the test when it parses.
    private static func rejection(_ json: String) throws -> VaultError {
        try #require(throws: VaultError.self) { try parse(json) }
    }

    // MARK: Fixtures

    @Test func fullResponse() throws {
        let credentials = try TokenResponse.parse(Self.fixture("full"), receivedAt: Self.receivedAt)
        #expect(credentials.accessToken == Self.bytes(try Self.fixtureString("full", "access_token")))
        #expect(credentials.refreshToken == Self.bytes("fake-refresh-token-r1-8f3a9c2e7b"))
        #expect(credentials.idToken == Self.bytes(try Self.fixtureString("full", "id_token")))
        #expect(credentials.tokenType == "Bearer")
        #expect(credentials.scopes == ["openid", "profile", "email", "offline_access"])
        #expect(credentials.expiresAt == Self.receivedAt.addingTimeInterval(3600))
    }

    @Test func minimalResponse() throws {
        let credentials = try TokenResponse.parse(Self.fixture("minimal"), receivedAt: Self.receivedAt)
        #expect(credentials.accessToken == Self.bytes("fake-opaque-access-token-4b1d0c"))
        #expect(credentials.tokenType == "bearer")
        #expect(credentials.refreshToken == nil)
        #expect(credentials.idToken == nil)
        #expect(credentials.scopes.isEmpty)
        #expect(credentials.expiresAt == nil)
    }

    @Test func expiresInAsNumericString() throws {
        let credentials = try TokenResponse.parse(Self.fixture("expires-in-string"), receivedAt: Self.receivedAt)
        #expect(credentials.expiresAt == Self.receivedAt.addingTimeInterval(3600))
        #expect(credentials.scopes == ["https://graph.example.com/User.Read"])
    }

    @Test func expiresAtIsUsedWithoutExpiresIn() throws {
        let credentials = try TokenResponse.parse(Self.fixture("expires-at"), receivedAt: Self.receivedAt)
        #expect(credentials.expiresAt == Date(timeIntervalSince1970: 1_767_229_200))
    }

    @Test func accessTokenExpIsUsedWithoutExpiresInOrExpiresAt() throws {
        let credentials = try TokenResponse.parse(Self.fixture("jwt-access-token-no-expires-in"),
                                                  receivedAt: Date(timeIntervalSince1970: 0))
        #expect(credentials.expiresAt == Self.accessTokenExp)
    }

    @Test func idTokenExpNeverSetsTheAccessTokenExpiry() throws {
        let credentials = try TokenResponse.parse(Self.fixture("opaque-access-token-with-id-token"),
                                                  receivedAt: Self.receivedAt)
        #expect(credentials.idToken != nil)
        #expect(credentials.expiresAt == nil)
    }

    @Test func missingAccessToken() throws {
        let error = try #require(throws: VaultError.self) {
            try TokenResponse.parse(Self.fixture("missing-access-token"), receivedAt: Self.receivedAt)
        }
        #expect(error.code == .invalidInput)
        #expect(error.message.contains("access_token is missing"))
        #expect(!error.description.contains("fake-refresh-token"))
    }

    @Test func accessTokenOfTheWrongType() throws {
        let error = try #require(throws: VaultError.self) {
            try TokenResponse.parse(Self.fixture("access-token-not-string"), receivedAt: Self.receivedAt)
        }
        #expect(error.code == .invalidInput)
        #expect(error.message.contains("access_token must be a string, not a number"))
        #expect(!error.description.contains("12345"))
    }

    @Test func invalidGrantErrorResponse() throws {
        let body = try Self.fixture("error-invalid-grant")
        let oauthError = try #require(TokenResponse.parseError(body))
        #expect(oauthError.error == "invalid_grant")
        #expect(oauthError.isInvalidGrant)
        #expect(oauthError.errorDescription == "The refresh token is expired or revoked.")
        #expect(oauthError.errorURI == "https://auth.example.com/docs/errors#invalid_grant")
        #expect(oauthError.description == "invalid_grant: The refresh token is expired or revoked.")

        let error = try #require(throws: VaultError.self) {
            try TokenResponse.parse(body, receivedAt: Self.receivedAt)
        }
        #expect(error.code == .invalidInput)
        #expect(error.message.contains("OAuth error"))
        #expect(error.message.contains("invalid_grant"))
    }

    @Test func parseErrorIsNilForOtherBodies() throws {
        #expect(TokenResponse.parseError(try Self.fixture("full")) == nil)
        #expect(TokenResponse.parseError(Array("not json".utf8)) == nil)
        #expect(TokenResponse.parseError(Array(#"["error"]"#.utf8)) == nil)
        #expect(TokenResponse.parseError(Array(#"{"error": 400}"#.utf8)) == nil)
        #expect(TokenResponse.parseError(Array(#"{"error": "invalid_client"}"#.utf8))?.isInvalidGrant == false)
    }

    // MARK: Expiry precedence and forms

    @Test func expiresInWinsOverExpiresAtAndJWTExp() throws {
        let access = try Self.fixtureString("full", "access_token")
        let credentials = try Self.parse(
            #"{"access_token":"\#(access)","token_type":"Bearer","expires_in":60,"expires_at":1767229200}"#)
        #expect(credentials.expiresAt == Self.receivedAt.addingTimeInterval(60))
    }

    @Test func expiresAtWinsOverJWTExp() throws {
        let access = try Self.fixtureString("full", "access_token")
        let credentials = try Self.parse(
            #"{"access_token":"\#(access)","token_type":"Bearer","expires_at":"1767300000"}"#)
        #expect(credentials.expiresAt == Date(timeIntervalSince1970: 1_767_300_000))
    }

    @Test func fractionalAndZeroExpiresIn() throws {
        let fractional = try Self.parse(#"{"access_token":"a","token_type":"Bearer","expires_in":"0.5"}"#)
        #expect(fractional.expiresAt == Self.receivedAt.addingTimeInterval(0.5))
        let zero = try Self.parse(#"{"access_token":"a","token_type":"Bearer","expires_in":0}"#)
        #expect(zero.expiresAt == Self.receivedAt)
        let null = try Self.parse(#"{"access_token":"a","token_type":"Bearer","expires_in":null}"#)
        #expect(null.expiresAt == nil)
    }

    @Test(arguments: [
        (#""expires_in":-1"#, "expires_in must not be negative"),
        (#""expires_in":"-1""#, "expires_in is a string that is not a number of seconds"),
        (#""expires_in":"1 hour""#, "expires_in is a string that is not a number of seconds"),
        (#""expires_in":"0x10""#, "expires_in is a string that is not a number of seconds"),
        (#""expires_in":"inf""#, "expires_in is a string that is not a number of seconds"),
        (#""expires_in":true"#, "expires_in must be a number of seconds, not a Boolean"),
        (#""expires_in":1e300"#, "expires_in puts the expiry beyond year 9999"),
        (#""expires_at":253402300800"#, "expires_at is beyond year 9999"),
        (#""expires_at":[1]"#, "expires_at must be a number of seconds, not an array"),
    ])
    func badExpiryMembersAreRejected(member: String, words: String) throws {
        let error = try Self.rejection(#"{"access_token":"fake-at-secret","token_type":"Bearer",\#(member)}"#)
        #expect(error.code == .invalidInput)
        #expect(error.message.contains(words), "\(error.message)")
        #expect(!error.description.contains("fake-at-secret"))
    }

    // MARK: Types and required members

    @Test(arguments: [
        (#"{"access_token":"fake-at-secret"}"#, "token_type is missing"),
        (#"{"access_token":"fake-at-secret","token_type":""}"#, "token_type is empty"),
        (#"{"access_token":"","token_type":"Bearer"}"#, "access_token is empty"),
        (#"{"access_token":null,"token_type":"Bearer"}"#, "access_token is missing"),
        (#"{"access_token":["fake-at-secret"],"token_type":"Bearer"}"#, "access_token must be a string, not an array"),
        (#"{"access_token":"fake-at-secret","token_type":7}"#, "token_type must be a string, not a number"),
        (#"{"access_token":"fake-at-secret","token_type":"Bearer","refresh_token":{"v":"fake-rt-secret"}}"#,
         "refresh_token must be a string, not an object"),
        (#"{"access_token":"fake-at-secret","token_type":"Bearer","id_token":false}"#, "id_token must be a string"),
        (#"{"access_token":"fake-at-secret","token_type":"Bearer","scope":42}"#, "scope must be a space-separated string"),
        (#"{"access_token":"fake-at-secret","token_type":"Bearer","scope":["a",1]}"#, "scope must hold only strings"),
        (#"["fake-at-secret"]"#, "the token response is an array, not a JSON object"),
        (#""fake-at-secret""#, "the token response is a string, not a JSON object"),
        (#"{"access_token":"fake-at-secret","token_type":"Bearer""#, "not valid JSON"),
        (#"{"access_token":"fake-at-secret","access_token":"fake-at-secret-2","token_type":"Bearer"}"#, "duplicate key"),
        ("", "not valid JSON"),
    ])
    func malformedResponsesAreRejectedWithoutShowingTokens(json: String, words: String) throws {
        let error = try Self.rejection(json)
        #expect(error.code == .invalidInput)
        #expect(error.message.contains(words), "\(error.message)")
        let shown = "\(error) \(error.message) \(error.fix ?? "")"
        #expect(!shown.contains("fake-at-secret"))
        #expect(!shown.contains("fake-rt-secret"))
    }

    @Test func lenientForms() throws {
        let credentials = try Self.parse(#"""
            {"access_token":"at","token_type":"Bearer","refresh_token":"","id_token":null,
             "scope":"  openid   profile ","unknown_member":{"x":1}}
            """#)
        #expect(credentials.refreshToken == nil)
        #expect(credentials.idToken == nil)
        #expect(credentials.scopes == ["openid", "profile"])
        let arrayScope = try Self.parse(#"{"access_token":"at","token_type":"Bearer","scope":["openid","email"]}"#)
        #expect(arrayScope.scopes == ["openid", "email"])
    }

    @Test func tokensAreKeptByteForByte() throws {
        let credentials = try Self.parse(#"{"access_token":"a\u00e9\/b","token_type":"Bearer","refresh_token":"r~._-"}"#)
        #expect(credentials.accessToken == SecureBytes(copying: Array("aé/b".utf8)))
        #expect(credentials.refreshToken == Self.bytes("r~._-"))
    }

    @Test func credentialsDescriptionNeverShowsTokens() throws {
        let credentials = try TokenResponse.parse(Self.fixture("full"), receivedAt: Self.receivedAt)
        let access = try Self.fixtureString("full", "access_token")
        for shown in [credentials.description, credentials.debugDescription, "\(credentials)",
                      String(reflecting: credentials), { var out = ""; dump(credentials, to: &out); return out }()] {
            #expect(!shown.contains(access.prefix(20)))
            #expect(!shown.contains("fake-refresh-token"))
            #expect(!shown.contains(String(access.suffix(20))))
        }
        #expect(credentials.description
            == "Credentials(Bearer, expires 2026-01-01T01:00:00.000Z, refresh token: yes, id token: yes, scopes: openid profile email offline_access)")
        let minimal = Credentials(accessToken: Self.bytes("x"))
        #expect(minimal.description == "Credentials(Bearer, no expiry known, refresh token: no, id token: no, scopes: not stated)")
    }

    @Test func oversizedBodiesAreRefused() throws {
        let body = #"{"access_token":"at","token_type":"Bearer","pad":""# + String(repeating: " ", count: TokenResponse.maximumLength) + #""}"#
        let error = try Self.rejection(body)
        #expect(error.message.contains("bytes long"))
    }
}
