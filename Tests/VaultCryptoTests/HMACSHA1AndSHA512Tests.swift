import Foundation
import Testing
import VaultCrypto

/// HMAC-SHA1 against RFC 2202 §3 and HMAC-SHA512 against RFC 4231 §4, read from cryptography-vectors.
@Suite struct HMACSHA1AndSHA512VectorTests {
    @Test func rfc2202SHA1CodesMatch() throws {
        guard let records = VectorFiles.records(.cryptography, "HMAC/rfc-2202-sha1.txt", recordStart: "Len") else { return }
        var checked = 0
        for record in records {
            let key = SymmetricKey(copying: try record.hex("Key"))
            let expected = try record.hex("MD")
            let code = try HMACSHA1.authenticationCode(for: try record.hex("Msg"), using: key)
            // RFC 2202 cases 5 truncate the tag to 96 bits; the file gives the full or the truncated code.
            #expect(Array(code.prefix(expected.count)) == expected, "\(record.label)")
            #expect(code.count == HMACSHA1.byteCount)
            checked += 1
        }
        #expect(checked >= 7)
    }

    @Test func rfc4231SHA512CodesMatch() throws {
        guard let records = VectorFiles.records(.cryptography, "HMAC/rfc-4231-sha512.txt", recordStart: "Len") else { return }
        var checked = 0
        for record in records {
            let key = SymmetricKey(copying: try record.hex("Key"))
            let expected = try record.hex("MD")
            let code = try HMACSHA512.authenticationCode(for: try record.hex("Msg"), using: key)
            #expect(Array(code.prefix(expected.count)) == expected, "\(record.label)")
            #expect(code.count == HMACSHA512.byteCount)
            checked += 1
        }
        #expect(checked >= 6)
    }

    @Test func anEmptyKeyAndMessageStillGiveAFullTag() throws {
        let empty = SymmetricKey(copying: [UInt8]())
        #expect(try HMACSHA1.authenticationCode(for: [UInt8](), using: empty).count == 20)
        #expect(try HMACSHA512.authenticationCode(for: [UInt8](), using: empty).count == 64)
        // Known: HMAC-SHA1("", "") per OpenSSL and Python's hmac module.
        #expect(Hex.encode(try HMACSHA1.authenticationCode(for: [UInt8](), using: empty)) == "fbdb1d1b18aa6c08324b7d64b71fb76370690e1d")
    }
}
