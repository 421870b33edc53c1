@testable import CredentialVault
import Foundation
import Testing

/// `OTPAuthURI`: what it accepts, and that each malformed URI is refused naming its parameter
/// without quoting the secret.
@Suite struct OTPAuthURITests {
    static let secret = "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP"

    static func parse(_ text: String) throws -> OTPAuthURI {
        try OTPAuthURI(parsing: SecureBytes(copying: Array(text.utf8)))
    }

    @Test func aFullURIIsRead() throws {
        let uri = try Self.parse("otpauth://totp/ACME%20Co:alice@example.com?secret=\(Self.secret)&issuer=ACME%20Co&algorithm=SHA256&digits=8&period=60\n")
        #expect(uri.label == "ACME Co:alice@example.com")
        #expect(uri.issuer == "ACME Co")
        #expect(uri.algorithm == .sha256)
        #expect(uri.digits == 8)
        #expect(uri.period == 60)
        #expect(uri.seed == SecureBytes(copying: Self.helloSeed))
    }

    /// What the secret above decodes to: "Hello!" 0xDEADBEEF, twice.
    static let helloSeed: [UInt8] = Array("Hello!".utf8) + [0xDE, 0xAD, 0xBE, 0xEF] + Array("Hello!".utf8) + [0xDE, 0xAD, 0xBE, 0xEF]

    @Test func defaultsAreSHA1SixDigitsThirtySeconds() throws {
        let uri = try Self.parse("OTPAUTH://TOTP/x?secret=\(Self.secret.lowercased())")
        #expect(uri.algorithm == .sha1 && uri.digits == 6 && uri.period == 30 && uri.issuer == nil)
        #expect(uri.seed == SecureBytes(copying: Self.helloSeed))
    }

    @Test func paddingUnknownParametersAndAnEmptyLabelAreAccepted() throws {
        // 10 bytes → 16 characters, no padding needed; 5 bytes + "=" padding to 8 characters.
        #expect(try Self.parse("otpauth://totp/?secret=GEZDGNBV&image=https%3A%2F%2Fx&counter=3").seed.count == 5)
        #expect(try Self.parse("otpauth://totp/a?secret=GEZDGNA%3D").seed.count == 4)
        #expect(try Self.parse("otpauth://totp/a?secret=GEZDGNA=").seed.count == 4)
    }

    @Test func theCanonicalURIReadsBackTheSame() throws {
        let uri = try Self.parse("otpauth://totp/A%20b:c?secret=\(Self.secret)&issuer=A%26B&algorithm=sha512&digits=7&period=45")
        let again = try OTPAuthURI(parsing: uri.uri)
        #expect(again.label == uri.label && again.issuer == "A&B" && again.algorithm == .sha512)
        #expect(again.digits == 7 && again.period == 45 && again.seed == uri.seed)
        let text = uri.uri.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
        #expect(text == "otpauth://totp/A%20b:c?secret=\(Self.secret)&issuer=A%26B&algorithm=SHA512&digits=7&period=45")
    }

    @Test func aBareBase32SecretGetsTheDefaults() throws {
        let uri = try OTPAuthURI(base32Secret: SecureBytes(copying: Array("jbsw y3dp-ehpk 3pxp".utf8)), label: "GitHub")
        #expect(uri.seed.count == 10 && uri.algorithm == .sha1 && uri.digits == 6 && uri.period == 30 && uri.label == "GitHub")
        #expect(throws: VaultError.self) { try OTPAuthURI(base32Secret: SecureBytes(copying: Array("not base32!".utf8)), label: "x") }
        #expect(OTPAuthURI.looksLikeURI(SecureBytes(copying: Array("OtpAuth://totp/x".utf8))))
        #expect(!OTPAuthURI.looksLikeURI(SecureBytes(copying: Array("JBSWY3DP".utf8))))
    }

    /// Each malformed URI and the parameter its error must name.
    static let malformed: [(uri: String, parameter: String)] = [
        ("https://example.com/?secret=\(secret)", "scheme"),
        ("otpauth:totp?secret=\(secret)", "scheme"),
        ("otpauth://totp", "type"),
        ("otpauth://hotp/x?secret=\(secret)&counter=1", "hotp"),
        ("otpauth://steam/x?secret=\(secret)", "type"),
        ("otpauth://totp/x", "secret"),
        ("otpauth://totp/x?issuer=A", "secret"),
        ("otpauth://totp/x?secret=", "secret"),
        ("otpauth://totp/x?secret=\(secret)1", "secret"),
        ("otpauth://totp/x?secret=\(secret.dropLast(31))", "secret"),
        ("otpauth://totp/x?secret=AB=CDEFG", "secret"),
        ("otpauth://totp/x?secret=%ZZ\(secret)", "secret"),
        ("otpauth://totp/x?secret=\(secret)&secret=\(secret)", "secret"),
        ("otpauth://totp/x?secret=\(secret)&algorithm=MD5", "algorithm"),
        ("otpauth://totp/x?secret=\(secret)&algorithm=", "algorithm"),
        ("otpauth://totp/x?secret=\(secret)&digits=5", "digits"),
        ("otpauth://totp/x?secret=\(secret)&digits=9", "digits"),
        ("otpauth://totp/x?secret=\(secret)&digits=six", "digits"),
        ("otpauth://totp/x?secret=\(secret)&digits=-6", "digits"),
        ("otpauth://totp/x?secret=\(secret)&period=0", "period"),
        ("otpauth://totp/x?secret=\(secret)&period=86401", "period"),
        ("otpauth://totp/x?secret=\(secret)&period=99999999999999999999", "period"),
        ("otpauth://totp/x?secret=\(secret)&period=", "period"),
        ("otpauth://totp/x?secret=\(secret)&period=30&period=60", "period"),
        ("otpauth://totp/%FF?secret=\(secret)", "label"),
        ("otpauth://totp/Steam:x?secret=\(secret)&period=30&digits=5&encoder=steam", "encoder"),
        ("otpauth://totp/x?secret=\(secret)&issuer=%0A", "issuer"),
    ]

    @Test(arguments: malformed)
    func aMalformedURIIsRefusedNamingTheParameter(uri: String, parameter: String) throws {
        do {
            _ = try Self.parse(uri)
            Issue.record("accepted \(parameter) case")
        } catch let error as VaultError {
            #expect(error.code == .invalidInput)
            #expect(error.message.contains(parameter), "\(error.message)")
            #expect(!error.message.contains(Self.secret.prefix(8)), "the secret is quoted")
            #expect(!"\(error)".contains(Self.secret.prefix(8)))
        }
    }

    @Test func aMistypedParameterHoldingTheSecretIsNeverQuoted() throws {
        let error = try #require(throws: VaultError.self) { try Self.parse("otpauth://totp/x?secert=\(Self.secret)") }
        #expect(error.message.contains("'secret' is missing"))
        #expect(!error.message.contains("JBSW") && !(error.fix ?? "").contains("JBSW"))
    }

    @Test func theDescriptionRedactsTheSeed() throws {
        let uri = try Self.parse("otpauth://totp/x?secret=\(Self.secret)")
        #expect(!"\(uri)".contains("JBSW") && "\(uri)".contains("redacted"))
        #expect(!String(reflecting: uri).contains("JBSW"))
    }

    @Test func mutatedURIsParseOrFailWithInvalidInputNeverACrash() throws {
        // 20,000 deterministic mutations (a fixed linear congruential sequence): byte flips,
        // insertions of the parser's delimiters, truncations. Each either parses or throws .invalidInput.
        let base = Array("otpauth://totp/A%20b:c?secret=\(Self.secret)&issuer=A%26B&algorithm=sha512&digits=7&period=45".utf8)
        let specials = Array("%&=?/#:".utf8) + [0, 0xFF, 0x80, 0x0A]
        var state: UInt64 = 0x2545_F491_4F6C_DD1D
        func next(_ bound: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % UInt64(bound))
        }
        var parsed = 0, refused = 0
        for _ in 0..<20_000 {
            var bytes = base
            for _ in 0...next(3) {
                switch next(4) {
                case 0: bytes[next(bytes.count)] ^= UInt8(1 << next(8))
                case 1: bytes.insert(specials[next(specials.count)], at: next(bytes.count + 1))
                case 2: bytes.removeLast(next(min(bytes.count, 12)))
                default: bytes[next(bytes.count)] = specials[next(specials.count)]
                }
                if bytes.isEmpty { bytes = [0x25] }
            }
            do {
                _ = try OTPAuthURI(parsing: SecureBytes(copying: bytes))
                parsed += 1
            } catch let error as VaultError {
                #expect(error.code == .invalidInput)
                refused += 1
            }
        }
        #expect(parsed > 0 && refused > 0)
    }

    @Test func base32RoundTripsEveryLength() throws {
        for length in 0...40 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            let text = Base32Text.encode(bytes)
            #expect(Base32.encode(SecureBytes(copying: bytes)).withUnsafeBytes { String(decoding: $0, as: UTF8.self) } == text)
            let decoded = Array(text.utf8).withUnsafeBytes { Base32.decode($0) }
            #expect(decoded == SecureBytes(copying: bytes), "length \(length)")
        }
    }
}
