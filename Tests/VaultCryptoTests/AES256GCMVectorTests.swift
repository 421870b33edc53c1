import Foundation
import Testing
import VaultCrypto

/// AES-256-GCM against NIST CAVP (SP 800-38D validation files) and Wycheproof.
@Suite struct AES256GCMVectorTests {
    /// The only sizes the API accepts, in bits as the vector files write them.
    static let acceptedIVBits = AES256GCM.nonceByteCount * 8
    static let acceptedTagBits = AES256GCM.tagByteCount * 8

    @Test func cavpEncryptProducesPublishedCiphertextAndTag() throws {
        guard let records = VectorFiles.records(.cryptography, "ciphers/AES/GCM/gcmEncryptExtIV256.rsp",
                                                recordStart: "Count") else { return }
        var checked = 0
        var otherSizesRejected = 0
        for record in records where record.sectionInt("Keylen") == 256 {
            let ivBits = try #require(record.sectionInt("IVlen"), "\(record.label)")
            let tagBits = try #require(record.sectionInt("Taglen"), "\(record.label)")
            guard ivBits == Self.acceptedIVBits, tagBits == Self.acceptedTagBits else {
                try expectSizesRejected(iv: record.hex("IV"), tag: record.hex("Tag"), label: record.label)
                otherSizesRejected += 1
                continue
            }
            let key = SymmetricKey(copying: try record.hex("Key"))
            let nonce = try AES256GCM.Nonce(bytes: record.hex("IV"))
            let box = try AES256GCM.seal(record.hex("PT"), using: key, nonce: nonce, authenticating: record.hex("AAD"))
            #expect(box.ciphertext == (try record.hex("CT")), "CT \(record.label)")
            #expect(box.tag == (try record.hex("Tag")), "Tag \(record.label)")
            #expect(try AES256GCM.open(box, using: key, authenticating: record.hex("AAD")).array == record.hex("PT"),
                    "round trip \(record.label)")
            checked += 1
        }
        print("AES-256-GCM CAVP encrypt: \(checked) vectors (IV 96, tag 128); \(otherSizesRejected) with other IV/tag sizes rejected by the API")
        #expect(checked >= 300)
        #expect(otherSizesRejected > 0)
    }

    @Test func cavpDecryptOpensValidAndRejectsEveryFail() throws {
        guard let records = VectorFiles.records(.cryptography, "ciphers/AES/GCM/gcmDecrypt256.rsp",
                                                recordStart: "Count") else { return }
        var checked = 0
        var failCases = 0
        var otherSizesRejected = 0
        for record in records where record.sectionInt("Keylen") == 256 {
            let ivBits = try #require(record.sectionInt("IVlen"), "\(record.label)")
            let tagBits = try #require(record.sectionInt("Taglen"), "\(record.label)")
            guard ivBits == Self.acceptedIVBits, tagBits == Self.acceptedTagBits else {
                try expectSizesRejected(iv: record.hex("IV"), tag: record.hex("Tag"), label: record.label)
                otherSizesRejected += 1
                continue
            }
            let key = SymmetricKey(copying: try record.hex("Key"))
            let box = try AES256GCM.SealedBox(nonce: AES256GCM.Nonce(bytes: record.hex("IV")),
                                              ciphertext: record.hex("CT"), tag: record.hex("Tag"))
            let aad = try record.hex("AAD")
            if record.flags.contains("FAIL") {
                #expect(record["PT"] == nil, "a FAIL case has no PT \(record.label)")
                var opened: SecureBytes?
                #expect(throws: CryptoError.authenticationFailure, "FAIL \(record.label)") {
                    opened = try AES256GCM.open(box, using: key, authenticating: aad)
                }
                #expect(opened == nil, "nothing returned for FAIL \(record.label)")
                failCases += 1
            } else {
                let plaintext = try record.hex("PT")
                #expect(try AES256GCM.open(box, using: key, authenticating: aad).array == plaintext, "PT \(record.label)")
            }
            checked += 1
        }
        print("AES-256-GCM CAVP decrypt: \(checked) vectors (\(failCases) FAIL) (IV 96, tag 128); \(otherSizesRejected) with other IV/tag sizes rejected by the API")
        #expect(checked >= 300)
        #expect(failCases >= 100)
        #expect(failCases < checked)
    }

    @Test func wycheproofCasesMatchOrAreRejectedBySize() throws {
        guard let file = try VectorFiles.wycheproof(.pycryptodome, "Cipher/wycheproof/aes_gcm_test.json",
                                                    groups: WycheproofAEADGroup.self) else { return }
        #expect(file.algorithm == "AES-GCM")
        var valid = 0, invalid = 0, acceptable = 0, rejectedBySize = 0
        for group in file.testGroups where group.keySize == 256 {
            for test in group.tests {
                let label = "tcId \(test.tcId) \(test.comment) \(test.flags)"
                #expect(test.iv.bytes.count * 8 == group.ivSize && test.tag.bytes.count * 8 == group.tagSize, "\(label)")
                guard group.ivSize == Self.acceptedIVBits, group.tagSize == Self.acceptedTagBits else {
                    // Whatever Wycheproof expects, the API must refuse these sizes outright.
                    try expectSizesRejected(iv: test.iv.bytes, tag: test.tag.bytes, label: label)
                    rejectedBySize += 1
                    continue
                }
                let key = SymmetricKey(copying: test.key.bytes)
                let nonce = try AES256GCM.Nonce(bytes: test.iv.bytes)
                let box = try AES256GCM.SealedBox(nonce: nonce, ciphertext: test.ct.bytes, tag: test.tag.bytes)
                switch test.result {
                case .valid:
                    let sealed = try AES256GCM.seal(test.msg.bytes, using: key, nonce: nonce, authenticating: test.aad.bytes)
                    #expect(sealed.ciphertext == test.ct.bytes, "ct \(label)")
                    #expect(sealed.tag == test.tag.bytes, "tag \(label)")
                    #expect(try AES256GCM.open(box, using: key, authenticating: test.aad.bytes).array == test.msg.bytes, "msg \(label)")
                    valid += 1
                case .invalid:
                    var opened: SecureBytes?
                    #expect(throws: CryptoError.authenticationFailure, "\(label)") {
                        opened = try AES256GCM.open(box, using: key, authenticating: test.aad.bytes)
                    }
                    #expect(opened == nil, "\(label)")
                    invalid += 1
                case .acceptable:
                    // Either outcome is allowed; it must still not crash, and success must round-trip.
                    if let opened = try? AES256GCM.open(box, using: key, authenticating: test.aad.bytes) {
                        #expect(opened.array == test.msg.bytes, "\(label)")
                    }
                    acceptable += 1
                }
            }
        }
        print("AES-256-GCM Wycheproof: \(valid + invalid + acceptable) vectors checked (\(valid) valid, \(invalid) invalid, \(acceptable) acceptable); \(rejectedBySize) with other IV/tag sizes rejected by the API")
        #expect(valid >= 30)
        #expect(invalid >= 20)
        #expect(rejectedBySize >= 10)
    }

    /// An IV other than 12 bytes or a tag other than 16 bytes never reaches the cipher.
    private func expectSizesRejected(iv: [UInt8], tag: [UInt8], label: String) throws {
        if iv.count != AES256GCM.nonceByteCount {
            #expect(throws: CryptoError.invalidNonceSize(expected: AES256GCM.nonceByteCount, actual: iv.count), "\(label)") {
                try AES256GCM.Nonce(bytes: iv)
            }
        }
        if tag.count != AES256GCM.tagByteCount {
            let nonce = try AES256GCM.Nonce()
            #expect(throws: CryptoError.invalidTagSize(expected: AES256GCM.tagByteCount, actual: tag.count), "\(label)") {
                try AES256GCM.SealedBox(nonce: nonce, ciphertext: [], tag: tag)
            }
        }
        #expect(iv.count != AES256GCM.nonceByteCount || tag.count != AES256GCM.tagByteCount, "\(label) has accepted sizes")
    }
}
