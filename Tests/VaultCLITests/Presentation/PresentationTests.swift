import Foundation
import Testing
@testable import CredentialVault
@testable import VaultCLI
import VaultCrypto

/// Masked previews never show more than a small part of a secret.
@Suite struct SecretPreviewTests {
    @Test func showsAtMostFourCharactersAndAnEighth() {
        #expect(SecretPreview.prefix(of: secret(String(repeating: "a", count: 11))) == nil)
        #expect(SecretPreview.prefix(of: secret("abcdefghijkl")) == "a…")
        #expect(SecretPreview.prefix(of: secret("abcdefghijklmnop")) == "ab…")
        #expect(SecretPreview.prefix(of: secret(String(repeating: "x", count: 31) + "y")) == "xxxx…")
        #expect(SecretPreview.prefix(of: secret("eyJhbGciOiJIUzI1NiJ9.e30.sig-sig-sig")) == "eyJh…")
    }

    @Test(arguments: [0, 1, 12, 100, 4096])
    func neverRevealsMoreThanAnEighth(count: Int) {
        let preview = SecretPreview.prefix(of: secret(String(repeating: "s", count: count)))
        let shown = (preview?.count ?? 1) - 1
        #expect(shown * 8 <= count)
        #expect(shown <= 4)
    }

    @Test func showsNothingForBinaryOrControlBytes() {
        #expect(SecretPreview.prefix(of: SecureBytes(copying: [0x1B, 0x5B] + Array(repeating: UInt8(0x41), count: 30))) == nil)
        #expect(SecretPreview.prefix(of: SecureBytes(copying: [UInt8](repeating: 0, count: 64))) == nil)
        #expect(SecretPreview.prefix(of: SecureBytes(copying: [0xC3, 0xA9] + Array(repeating: UInt8(0x41), count: 30))) == nil)
    }
}

/// `--kind` accepts raw names and kebab-case aliases.
@Suite struct EntryKindParsingTests {
    @Test(arguments: [
        ("accessToken", EntryKind.accessToken), ("access-token", .accessToken), ("ACCESS_TOKEN", .accessToken),
        ("refresh-token", .refreshToken), ("idToken", .idToken), ("id-token", .idToken),
        ("password", .password), ("generic", .generic),
    ])
    func acceptsRawNamesAndAliases(text: String, kind: EntryKind) {
        #expect(EntryKind(userInput: text) == kind)
    }

    @Test(arguments: ["", "token", "access", "access token", "secret"])
    func rejectsOtherNames(text: String) {
        #expect(EntryKind(userInput: text) == nil)
    }
}

/// The one table from error codes to the `vault` command's exit statuses.
@Suite struct VaultExitStatusTests {
    @Test(arguments: [
        (VaultError.Code.invalidInput, 64), (.corrupt, 65), (.tampered, 65), (.unsupportedVersion, 65),
        (.kdfOutsidePolicy, 65), (.rollbackDetected, 65), (.notFound, 66), (.alreadyExists, 73), (.io, 74),
        (.busy, 75), (.wrongKey, 77), (.invalidKey, 77), (.insecurePermissions, 77),
        (.agentUnavailable, 69), (.busUnavailable, 69), (.deniedByRule, 77),
    ] as [(VaultError.Code, Int32)])
    func mapsEveryStoreCodeToItsDocumentedStatus(code: VaultError.Code, status: Int32) {
        #expect(VaultExitStatus.forCode(code) == status)
        #expect(VaultError(code, "m").exitStatus == status)
    }

    @Test func unknownCodesExitWithOne() {
        #expect(VaultExitStatus.forCode(VaultError.Code(rawValue: "somethingNew")) == 1)
    }

    @Test func everyMappedStatusIsDocumentedOnce() {
        let documented = VaultExitStatus.meanings.map(\.status)
        #expect(Set(documented).count == documented.count)
        #expect(Set(VaultExitStatus.byCode.values).isSubset(of: Set(documented)))
        #expect(documented == [0, 1, 64, 65, 66, 69, 71, 73, 74, 75, 76, 77])
    }
}

/// RFC 3339 text for the CLI's JSON.
@Suite struct RFC3339Tests {
    @Test func writesUTCWithMillisecondsAndReadsItBack() throws {
        let date = Date(timeIntervalSince1970: 1_800_000_000.25)
        #expect(RFC3339.string(from: date) == "2027-01-15T08:00:00.250Z")
        #expect(RFC3339.date(from: "2027-01-15T08:00:00.250Z") == date)
        #expect(RFC3339.date(from: "2027-01-15T09:00:00.250+01:00") == date)
        #expect(RFC3339.date(from: "2027-01-15") == nil)
    }

    @Test func clampsDatesOutsideFourDigitYears() {
        #expect(RFC3339.string(from: Date(timeIntervalSince1970: 1e13)).hasPrefix("9999-12-31T23:59:59"))
        #expect(RFC3339.string(from: Date(timeIntervalSince1970: -1e15)).hasPrefix("0001-01-01T00:00:00"))
    }
}

/// The default vault directory follows VAULT_DIR, then the XDG Base Directory spec.
@Suite struct VaultLocationTests {
    @Test func prefersVaultDirThenXDGThenHome() {
        #expect(VaultLocation.defaultDirectory(environment: ["VAULT_DIR": "/v", "XDG_DATA_HOME": "/x", "HOME": "/h"]) == "/v")
        #expect(VaultLocation.defaultDirectory(environment: ["XDG_DATA_HOME": "/x", "HOME": "/h"]) == "/x/vault")
        #expect(VaultLocation.defaultDirectory(environment: ["HOME": "/h"]) == "/h/.local/share/vault")
    }

    @Test func ignoresEmptyAndRelativeValues() {
        #expect(VaultLocation.defaultDirectory(environment: ["VAULT_DIR": "", "XDG_DATA_HOME": "rel", "HOME": "/h"])
            == "/h/.local/share/vault")
    }
}

/// What `vault list --json` and `vault inspect` print.
@Suite struct EntryReportTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    @Test func metadataJSONHasTheDocumentedFields() throws {
        let metadata = EntryMetadata(name: "api", owner: "", kind: .accessToken, label: nil, createdAt: now, updatedAt: now,
                                     expiresAt: now.addingTimeInterval(-1), transferable: true, secretByteCount: 40)
        let object = try #require(metadata.jsonValue(now: now).objectValue)
        #expect(Set(object.keys) == ["name", "owner", "kind", "label", "createdAt", "updatedAt", "expiresAt", "expired",
                                     "secretBytes", "transferable", "attributes"])
        #expect(object["attributes"] == .object([:]), "an object even when there are none")
        #expect(object["label"] == .null)
        #expect(object["expired"] == true)
        #expect(object["kind"] == "accessToken")
        #expect(object["expiresAt"] == "2027-01-15T07:59:59.000Z")
        #expect(object["secretBytes"] == 40)
    }

    @Test func inspectionDecodesAJWTButNeverHoldsTheTokenOrSignature() throws {
        let header = Base64URLForTests.encode(#"{"alg":"HS256","typ":"JWT"}"#)
        let claims = Base64URLForTests.encode(#"{"sub":"alice","exp":1800000600}"#)
        let signature = "c2lnbmF0dXJlLW5vdC1zaG93bg"
        let token = "\(header).\(claims).\(signature)"
        let entry = VaultEntry(metadata: metadata(bytes: token.utf8.count), secret: secret(token))
        let inspection = EntryInspection(entry, now: now)
        #expect(inspection.jwt?.claims["sub"] == "alice")
        #expect(inspection.jwtExpiry == .expiresIn(600))
        let text = inspection.fields.map { "\($0.label) \($0.value)" }.joined(separator: "\n")
            + String(decoding: try inspection.jsonValue.serialized(), as: UTF8.self)
        #expect(text.contains("alice"))
        #expect(!text.contains(signature))
        #expect(!text.contains(claims))
        #expect(!text.contains(token))
    }

    @Test func inspectionOfAPlainSecretHasNoJWT() throws {
        let entry = VaultEntry(metadata: metadata(bytes: 10), secret: secret("hunter2-xy"))
        let inspection = EntryInspection(entry, now: now)
        #expect(inspection.jwt == nil)
        #expect(inspection.preview == nil)
        let json = try #require(inspection.jsonValue.objectValue)
        #expect(json["jwt"] == .null)
        #expect(json["preview"] == .null)
        #expect(json["expiry"] == "no expiry")
    }

    func metadata(bytes: Int) -> EntryMetadata {
        EntryMetadata(name: "t", owner: "", kind: .accessToken, label: "l", createdAt: now, updatedAt: now,
                      expiresAt: nil, transferable: true, secretByteCount: bytes)
    }
}

/// Unpadded base64url for building test tokens.
enum Base64URLForTests {
    static func encode(_ text: String) -> String {
        Data(text.utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
