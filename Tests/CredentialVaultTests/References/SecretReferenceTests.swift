import Testing
@testable import CredentialVault

@Suite("SecretReference")
struct SecretReferenceTests {
    @Test(arguments: [
        ("vault://api", "api", ""),
        ("vault://db/password", "db/password", ""),
        ("vault://x%2Fy", "x/y", ""),
        ("vault://100%25", "100%", ""),
        ("vault://a%252F", "a%2F", ""),
        ("vault://My%20Bank", "My Bank", ""),
        ("vault://My Bank", "My Bank", ""),
        ("vault://caf%C3%A9", "café", ""),
        ("vault://session.access-token?owner=user:u-1001", "session.access-token", "user:u-1001"),
        ("vault://item?owner=guest%3Aabc", "item", "guest:abc"),
        ("vault://item?owner=", "item", ""),
    ])
    func validReferencesDecodeOnce(text: String, name: String, owner: String) throws {
        let reference = try #require(try SecretReference.parse(text))
        #expect(reference.name == name)
        #expect(reference.owner == owner)
        #expect(try SecretReference.parse(reference.description) == reference, "the canonical form reads back")
    }

    @Test(arguments: ["api", "", "https://example.test", "VAULT://api", " vault://api", "vault:/api", "vault:\u{301}//api"])
    func otherTextIsNoReference(text: String) throws {
        #expect(try SecretReference.parse(text) == nil)
    }

    @Test(arguments: [
        "vault://", "vault://?owner=x", "vault://a#b", "vault://a?owner=x#f", "vault://a?other=1", "vault://a?owner=x&owner=y",
        "vault://a?owner=x&b=1", "vault://a%", "vault://a%2", "vault://a%zz", "vault://a%FF", "vault://a%0A", "vault://a%1B[31m",
        "vault://cafe%CC%81", "vault://s#\u{301}x", "vault://a?\u{301}owner=x", "vault://a?owner=x&\u{301}b=1",
    ])
    func malformedReferencesAreRefused(text: String) {
        let error = #expect(throws: VaultError.self) { try SecretReference.parse(text) }
        #expect(error?.code == .invalidInput)
    }

    @Test func theCanonicalFormEscapesOnlyWhatItMust() throws {
        let reference = try SecretReference(name: "a b?c#d%e/f", owner: "user:x&y")
        #expect(reference.description == "vault://a%20b%3Fc%23d%25e/f?owner=user:x%26y")
    }
}
