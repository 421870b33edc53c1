import Foundation
import Testing
@testable import VaultCrypto

/// HKDF-SHA256 against RFC 5869 Appendix A and Wycheproof.
@Suite struct HKDFSHA256VectorTests {
    @Test func rfc5869ExtractAndDeriveMatchPRKAndOKM() throws {
        guard let records = VectorFiles.records(.cryptography, "KDF/rfc-5869-HKDF-SHA256.txt",
                                                recordStart: "COUNT") else { return }
        var checked = 0
        for record in records {
            #expect(record["Hash"] == "SHA-256", "\(record.label)")
            let ikm = try record.hex("IKM"), salt = try record.hex("salt"), info = try record.hex("info")
            let length = try record.int("L")
            let prk = try HKDFSHA256.extract(inputKeyMaterial: ikm, salt: salt)
            #expect(prk.array == (try record.hex("PRK")), "PRK \(record.label)")
            let okm = try HKDFSHA256.deriveKey(inputKeyMaterial: ikm, salt: salt, info: info, outputByteCount: length)
            #expect(okm.array == (try record.hex("OKM")), "OKM \(record.label)")
            let expanded = try HKDFSHA256.expand(pseudoRandomKey: prk, info: info, outputByteCount: length)
            #expect(expanded == okm, "expand(PRK) \(record.label)")
            checked += 1
        }
        print("HKDF-SHA256 RFC 5869: \(checked) vectors (PRK and OKM)")
        #expect(checked >= 3)
    }

    @Test func wycheproofValidMatchAndInvalidThrow() throws {
        guard let file = try VectorFiles.wycheproof(.pycryptodome, "Protocol/wycheproof/hkdf_sha256_test.json",
                                                    groups: WycheproofHKDFGroup.self) else { return }
        #expect(file.algorithm == "HKDF-SHA-256")
        var valid = 0, invalid = 0, acceptable = 0, emptyIKM = 0
        for group in file.testGroups {
            for test in group.tests {
                let label = "tcId \(test.tcId) \(test.comment) \(test.flags)"
                if test.ikm.bytes.isEmpty { emptyIKM += 1 }
                switch test.result {
                case .valid:
                    let okm = try HKDFSHA256.deriveKey(inputKeyMaterial: test.ikm.bytes, salt: test.salt.bytes,
                                                       info: test.info.bytes, outputByteCount: test.size)
                    #expect(okm.array == test.okm.bytes, "\(label)")
                    valid += 1
                case .invalid:
                    #expect(throws: CryptoError.self, "\(label)") {
                        try HKDFSHA256.deriveKey(inputKeyMaterial: test.ikm.bytes, salt: test.salt.bytes,
                                                 info: test.info.bytes, outputByteCount: test.size)
                    }
                    invalid += 1
                case .acceptable:
                    if let okm = try? HKDFSHA256.deriveKey(inputKeyMaterial: test.ikm.bytes, salt: test.salt.bytes,
                                                          info: test.info.bytes, outputByteCount: test.size) {
                        #expect(okm.array == test.okm.bytes, "\(label)")
                    }
                    acceptable += 1
                }
            }
        }
        print("HKDF-SHA256 Wycheproof: \(valid + invalid + acceptable) vectors (\(valid) valid, \(invalid) invalid, \(acceptable) acceptable, \(emptyIKM) with empty IKM)")
        #expect(valid >= 50)
        #expect(invalid >= 1)
    }
}

/// HKDF-SHA256 output sizes and edge inputs.
@Suite struct HKDFSHA256Tests {
    @Test(arguments: [0, -1, HKDFSHA256.maximumOutputByteCount + 1])
    func outputSizeOutOfRangeIsRejected(size: Int) {
        let derived = #expect(throws: CryptoError.self) {
            try HKDFSHA256.deriveKey(inputKeyMaterial: [UInt8](repeating: 1, count: 32), outputByteCount: size)
        }
        let expanded = #expect(throws: CryptoError.self) {
            try HKDFSHA256.expand(pseudoRandomKey: [UInt8](repeating: 1, count: 32), outputByteCount: size)
        }
        for error in [derived, expanded] {
            guard case let .parameterOutOfBounds(parameter, _)? = error?.kind else {
                Issue.record("expected parameterOutOfBounds, got \(String(describing: error))")
                continue
            }
            #expect(parameter == "outputByteCount")
        }
    }

    @Test func maximumOutputSizeIsAccepted() throws {
        let okm = try HKDFSHA256.deriveKey(inputKeyMaterial: [UInt8](repeating: 1, count: 32),
                                           outputByteCount: HKDFSHA256.maximumOutputByteCount)
        #expect(okm.count == 8160)
    }

    /// RFC 5869 §2.2–2.3 built from HMAC-SHA256, itself checked against RFC 4231.
    private static func referenceHKDF(ikm: [UInt8], salt: [UInt8], info: [UInt8], length: Int) throws -> (prk: [UInt8], okm: [UInt8]) {
        let prk = try HMACSHA256.authenticationCode(
            for: ikm, using: SymmetricKey(copying: salt.isEmpty ? [UInt8](repeating: 0, count: 32) : salt))
        var okm: [UInt8] = [], previous: [UInt8] = []
        var counter: UInt8 = 1
        while okm.count < length {
            previous = try HMACSHA256.authenticationCode(for: previous + info + [counter], using: SymmetricKey(copying: prk))
            okm += previous
            counter += 1
        }
        return (prk, Array(okm.prefix(length)))
    }

    @Test(arguments: [[UInt8](), Array("salt".utf8)])
    func emptyInputKeyMaterialIsAccepted(salt: [UInt8]) throws {
        // RFC 5869 allows an empty IKM; some OpenSSL versions refuse an empty HKDF key.
        let info = Array("vault test".utf8)
        let reference = try Self.referenceHKDF(ikm: [], salt: salt, info: info, length: 42)
        #expect(try HKDFSHA256.extract(inputKeyMaterial: [UInt8](), salt: salt).array == reference.prk)
        #expect(try HKDFSHA256.deriveKey(inputKeyMaterial: [UInt8](), salt: salt, info: info, outputByteCount: 42).array == reference.okm)
    }

    @Test func matchesHMACConstructionForLongOutput() throws {
        let ikm = try SecureRandom.bytes(count: 32), salt = try SecureRandom.bytes(count: 16), info = Array("ctx".utf8)
        let reference = try Self.referenceHKDF(ikm: ikm, salt: salt, info: info, length: 1000)
        #expect(try HKDFSHA256.deriveKey(inputKeyMaterial: ikm, salt: salt, info: info, outputByteCount: 1000).array == reference.okm)
    }

    @Test func differentInfoGivesIndependentKeys() throws {
        let ikm = [UInt8](repeating: 9, count: 32)
        let a = try HKDFSHA256.deriveKey(inputKeyMaterial: ikm, info: Array("header-mac".utf8), outputByteCount: 32)
        let b = try HKDFSHA256.deriveKey(inputKeyMaterial: ikm, info: Array("payload".utf8), outputByteCount: 32)
        #expect(a != b)
    }
}
