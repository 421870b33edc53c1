import CredentialVault
import Foundation
import Testing

/// TOTP against RFC 6238 Appendix B (every time, SHA1, SHA256 and SHA512, 8 digits) and HOTP
/// against RFC 4226 Appendix D, from the published files.
@Suite struct TOTPVectorTests {
    @Test func rfc6238AppendixBCodesMatchForAllThreeAlgorithms() throws {
        guard let records = RFCVectorFile.records("twofactor/rfc-6238.txt") else { return }
        var checkedPerAlgorithm: [OTPAlgorithm: Int] = [:]
        for record in records {
            let mode = try #require(record["MODE"]), secret = try #require(record["SECRET"])
            let algorithm = try #require(OTPAlgorithm(rawValue: mode), "MODE \(mode)")
            let time = try #require(record["TIME"].flatMap(Int.self.init))
            let expected = try #require(record["TOTP"])
            let parameters = try OTPAuthURI(seed: SecureBytes(copying: Array(secret.utf8)), label: "rfc6238",
                                            algorithm: algorithm, digits: expected.count, period: 30)
            let code = try TOTPGenerator.code(for: parameters, at: Date(timeIntervalSince1970: TimeInterval(time)))
            #expect(code.code == expected, "COUNT \(record["COUNT"] ?? "?") \(mode) at \(time)")
            #expect(code.validUntil.timeIntervalSince1970 == TimeInterval((time / 30 + 1) * 30))
            #expect(code.validFrom.timeIntervalSince1970 == TimeInterval(time / 30 * 30))
            checkedPerAlgorithm[algorithm, default: 0] += 1
        }
        // Appendix B: six times for each of the three algorithms.
        #expect(checkedPerAlgorithm == [.sha1: 6, .sha256: 6, .sha512: 6])
    }

    @Test func rfc6238CodesComeThroughTheURIParserToo() throws {
        guard let records = RFCVectorFile.records("twofactor/rfc-6238.txt") else { return }
        for record in records {
            let mode = try #require(record["MODE"]), secret = try #require(record["SECRET"])
            let expected = try #require(record["TOTP"]), time = try #require(record["TIME"].flatMap(Int.self.init))
            let base32 = Base32Text.encode(Array(secret.utf8))
            let uri = "otpauth://totp/RFC:6238?secret=\(base32)&algorithm=\(mode)&digits=8&period=30"
            let parsed = try OTPAuthURI(parsing: SecureBytes(copying: Array(uri.utf8)))
            #expect(try TOTPGenerator.code(for: parsed, at: Date(timeIntervalSince1970: TimeInterval(time))).code == expected)
        }
    }

    @Test func rfc4226AppendixDHOTPValuesMatch() throws {
        guard let records = RFCVectorFile.records("twofactor/rfc-4226.txt") else { return }
        var checked = 0
        for record in records {
            let secret = try #require(record["SECRET"])
            let counter = try #require(record["COUNTER"].flatMap(UInt64.init))
            let expected = try #require(record["HOTP"])
            let value = try TOTPGenerator.hotp(seed: SecureBytes(copying: Array(secret.utf8)), counter: counter,
                                               digits: 6, algorithm: .sha1)
            #expect(value == expected, "counter \(counter)")
            checked += 1
        }
        #expect(checked == 10)
    }

    @Test func aTimeBefore1970HasNoCode() throws {
        let parameters = try OTPAuthURI(seed: SecureBytes(copying: Array("12345678901234567890".utf8)), label: "")
        #expect(throws: VaultError.self) { try TOTPGenerator.code(for: parameters, at: Date(timeIntervalSince1970: -1)) }
        #expect(throws: VaultError.self) { try TOTPGenerator.code(for: parameters, at: Date(timeIntervalSince1970: 1e13)) }
        #expect(try TOTPGenerator.code(for: parameters, at: Date(timeIntervalSince1970: 0)).code.count == 6)
    }

    @Test func aTimeStepEndingAfterTheYear9999HasNoCode() throws {
        let parameters = try OTPAuthURI(seed: SecureBytes(copying: Array("12345678901234567890".utf8)), label: "")
        // 9999-12-31T23:59:50Z: its 30-second step ends at 10000-01-01T00:00:00Z, past what a timestamp can say.
        let late = Date(timeIntervalSince1970: 253_402_300_790)
        let error = expectVaultError(.invalidInput) { try TOTPGenerator.code(for: parameters, at: late) }
        #expect(error?.message.contains("after the year 9999") == true)
        // The last whole step before it still has a code, valid until its real end.
        let code = try TOTPGenerator.code(for: parameters, at: Date(timeIntervalSince1970: 253_402_300_769))
        #expect(code.validUntil.timeIntervalSince1970 == 253_402_300_770)
    }

    @Test func leadingZerosAreKept() throws {
        // RFC 6238 Appendix B, SHA1 at 1111111109: 07081804 (8 digits); its last 6 digits are 081804.
        let parameters = try OTPAuthURI(seed: SecureBytes(copying: Array("12345678901234567890".utf8)), label: "", digits: 6)
        #expect(try TOTPGenerator.code(for: parameters, at: Date(timeIntervalSince1970: 1_111_111_109)).code == "081804")
    }
}

/// RFC 4648 base32 for building test URIs (the tests' own, so the parser is not checked against itself).
enum Base32Text {
    static func encode(_ bytes: [UInt8]) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")
        var out = "", buffer = 0, bits = 0
        for byte in bytes {
            buffer = (buffer << 8 | Int(byte)) & 0xffff
            bits += 8
            while bits >= 5 {
                bits -= 5
                out.append(alphabet[(buffer >> bits) & 0x1f])
            }
        }
        if bits > 0 { out.append(alphabet[(buffer << (5 - bits)) & 0x1f]) }
        return out
    }
}
