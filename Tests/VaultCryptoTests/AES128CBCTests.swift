import Foundation
import Testing
import VaultCrypto

/// AES-128-CBC with PKCS#7 padding (the Secret Service session cipher) against NIST CAVP's
/// AES-128 CBC files in cryptography-vectors (`ciphers/AES/CBC/`), and its refusals.
@Suite struct AES128CBCTests {
    static let cavpFiles = ["CBCGFSbox128.rsp", "CBCKeySbox128.rsp", "CBCVarKey128.rsp", "CBCVarTxt128.rsp", "CBCMMT128.rsp"]

    /// The CAVP cases (ENCRYPT and DECRYPT sections alike: both give KEY, IV, PLAINTEXT, CIPHERTEXT).
    static func cavpCases(sourceLocation: SourceLocation = #_sourceLocation) -> [VectorRecord]? {
        var all: [VectorRecord] = []
        for file in cavpFiles {
            guard let records = VectorFiles.records(.cryptography, "ciphers/AES/CBC/\(file)", recordStart: "COUNT",
                                                    sourceLocation: sourceLocation) else { return nil }
            all += records
        }
        return all
    }

    @Test func nistVectorsAreTheCiphertextBeforeOneBlockOfPadding() throws {
        guard let records = Self.cavpCases() else { return }
        var checked = 0
        for record in records {
            let key = SecureBytes(copying: try record.hex("KEY"))
            let iv = try record.hex("IV")
            let plaintext = try record.hex("PLAINTEXT")
            let expected = try record.hex("CIPHERTEXT")
            // CAVP's plaintexts are whole blocks, so PKCS#7 adds a whole block of 0x10 after them.
            let ciphertext = try AES128CBC.encrypt(key: key, iv: iv, plaintext: SecureBytes(copying: plaintext))
            #expect(ciphertext.count == plaintext.count + 16, "\(record.label)")
            #expect(Array(ciphertext.prefix(expected.count)) == expected, "\(record.label)")
            #expect(try AES128CBC.decrypt(key: key, iv: iv, ciphertext: ciphertext).array == plaintext, "round trip \(record.label)")
            checked += 1
        }
        print("AES-128-CBC NIST CAVP: \(checked) vectors")
        #expect(checked == 14 + 42 + 256 + 256 + 20)
    }

    /// Decryption against the published answers, padding included: CBC decrypts a first block to
    /// D(C1) ⊕ IV, so with IV' = IV ⊕ P1 ⊕ T the vector's first ciphertext block decrypts to T.
    /// With T = 15 bytes ‖ 0x01 that is a valid padded 15-byte message; with T = 16 × 0x10, an
    /// empty one; with T ending in 0x00 or 0x11, a bad padding.
    @Test func nistVectorsDecryptThroughThePadding() throws {
        guard let records = Self.cavpCases() else { return }
        var checked = 0
        for record in records {
            let key = SecureBytes(copying: try record.hex("KEY"))
            let iv = try record.hex("IV")
            let p1 = Array(try record.hex("PLAINTEXT").prefix(16))
            let c1 = Array(try record.hex("CIPHERTEXT").prefix(16))
            func steered(to target: [UInt8]) -> [UInt8] { (0..<16).map { iv[$0] ^ p1[$0] ^ target[$0] } }

            let message = (0..<15).map { UInt8(truncatingIfNeeded: $0 &* 17 &+ checked) }
            #expect(try AES128CBC.decrypt(key: key, iv: steered(to: message + [0x01]), ciphertext: c1).array == message, "\(record.label)")
            #expect(try AES128CBC.decrypt(key: key, iv: steered(to: [UInt8](repeating: 0x10, count: 16)), ciphertext: c1).isEmpty,
                    "\(record.label)")
            for badEnd: UInt8 in [0x00, 0x11] {
                #expect(throws: CryptoError.invalidPadding, "\(record.label)") {
                    try AES128CBC.decrypt(key: key, iv: steered(to: message + [badEnd]), ciphertext: c1)
                }
            }
            checked += 1
        }
        #expect(checked > 300)
    }

    @Test func roundTripsEveryLengthAroundTheBlockSize() throws {
        let key = SecureBytes(copying: (0..<16).map { UInt8($0 * 3) })
        let iv = (0..<16).map { UInt8(0xF0 - $0) }
        for length in 0...49 {
            let plaintext = (0..<length).map { UInt8(truncatingIfNeeded: $0 * 7 + 1) }
            let ciphertext = try AES128CBC.encrypt(key: key, iv: iv, plaintext: SecureBytes(copying: plaintext))
            #expect(ciphertext.count == (length / 16 + 1) * 16, "length \(length)")
            #expect(try AES128CBC.decrypt(key: key, iv: iv, ciphertext: ciphertext).array == plaintext, "length \(length)")
        }
        // 1 MiB with NUL bytes.
        let large = [UInt8](repeating: 0, count: 1 << 20)
        let ciphertext = try AES128CBC.encrypt(key: key, iv: iv, plaintext: SecureBytes(copying: large))
        #expect(try AES128CBC.decrypt(key: key, iv: iv, ciphertext: ciphertext).array == large)
    }

    @Test func wrongKeyAndIVSizesAreRefused() throws {
        let plaintext = SecureBytes(copying: Array("secret".utf8))
        let good = SecureBytes(copying: [UInt8](repeating: 1, count: 16))
        let iv = [UInt8](repeating: 2, count: 16)
        for size in [0, 15, 17, 32] {
            let key = SecureBytes(copying: [UInt8](repeating: 1, count: size))
            #expect(throws: CryptoError.invalidKeySize(expected: 16, actual: size)) {
                try AES128CBC.encrypt(key: key, iv: iv, plaintext: plaintext)
            }
            #expect(throws: CryptoError.invalidKeySize(expected: 16, actual: size)) {
                try AES128CBC.decrypt(key: key, iv: iv, ciphertext: [UInt8](repeating: 0, count: 16))
            }
            let badIV = [UInt8](repeating: 2, count: size)
            #expect(throws: CryptoError.invalidNonceSize(expected: 16, actual: size)) {
                try AES128CBC.encrypt(key: good, iv: badIV, plaintext: plaintext)
            }
            #expect(throws: CryptoError.invalidNonceSize(expected: 16, actual: size)) {
                try AES128CBC.decrypt(key: good, iv: badIV, ciphertext: [UInt8](repeating: 0, count: 16))
            }
        }
    }

    @Test func ciphertextsOfABadLengthAreRefused() throws {
        let key = SecureBytes(copying: [UInt8](repeating: 9, count: 16))
        let iv = [UInt8](repeating: 0, count: 16)
        let ciphertext = try AES128CBC.encrypt(key: key, iv: iv, plaintext: SecureBytes(copying: Array("a secret value".utf8)))
        for bad in [[UInt8](), Array(ciphertext.prefix(15)), Array(ciphertext.prefix(1)), ciphertext + [0], ciphertext.dropLast()] {
            #expect(throws: CryptoError.invalidPadding, "\(bad.count) bytes") {
                try AES128CBC.decrypt(key: key, iv: iv, ciphertext: Array(bad))
            }
        }
    }

    /// A wrong key or an altered last block almost always breaks the padding and returns nothing;
    /// CBC cannot promise it always does (about 1 in 256 alterations still unpads), so the test
    /// counts: every refusal is `invalidPadding`, and most alterations are refused.
    @Test func tamperedCiphertextsAndWrongKeysGiveNoPlaintext() throws {
        let key = SecureBytes(copying: (0..<16).map { UInt8($0) })
        let iv = [UInt8](repeating: 0x5A, count: 16)
        let plaintext = Array("correct horse battery staple".utf8)
        let ciphertext = try AES128CBC.encrypt(key: key, iv: iv, plaintext: SecureBytes(copying: plaintext))
        var refused = 0, tries = 0
        for position in (ciphertext.count - 16)..<ciphertext.count {
            for bit in 0..<8 {
                var altered = ciphertext
                altered[position] ^= 1 << bit
                tries += 1
                do {
                    let decrypted = try AES128CBC.decrypt(key: key, iv: iv, ciphertext: altered)
                    #expect(decrypted.array != plaintext)
                } catch let error as CryptoError {
                    #expect(error == .invalidPadding)
                    refused += 1
                }
            }
        }
        #expect(refused >= tries * 9 / 10, "\(refused) of \(tries) alterations refused")

        var wrongKeyRefusals = 0
        for byte in 0..<64 {
            let wrong = SecureBytes(copying: (0..<16).map { UInt8($0) ^ (($0 == 0) ? UInt8(byte + 1) : 0) })
            do {
                let decrypted = try AES128CBC.decrypt(key: wrong, iv: iv, ciphertext: ciphertext)
                #expect(decrypted.array != plaintext)
            } catch let error as CryptoError {
                #expect(error == .invalidPadding)
                wrongKeyRefusals += 1
            }
        }
        #expect(wrongKeyRefusals >= 56, "\(wrongKeyRefusals) of 64 wrong keys refused")
    }

    @Test func theErrorNamesNoBytes() {
        #expect(CryptoError.invalidPadding.description.lowercased().contains("padding"))
    }
}
