import Foundation
import Testing
import VaultCrypto

/// AES-256-CTR against the published RFC 3686 vectors (cryptography-vectors'
/// `ciphers/AES/CTR/aes-256-ctr.txt`), and its refusals.
@Suite struct AES256CTRVectorTests {
    @Test func rfc3686VectorsEncryptAndDecrypt() throws {
        guard let records = VectorFiles.records(.cryptography, "ciphers/AES/CTR/aes-256-ctr.txt", recordStart: "COUNT") else { return }
        var checked = 0
        for record in records {
            let key = SymmetricKey(copying: try record.hex("KEY"))
            let counter = try record.hex("IV")
            let plaintext = try record.hex("PLAINTEXT")
            let ciphertext = try AES256CTR.xor(plaintext, using: key, counterBlock: counter)
            #expect(ciphertext == (try record.hex("CIPHERTEXT")), "\(record.label)")
            #expect(try AES256CTR.xor(ciphertext, using: key, counterBlock: counter) == plaintext, "round trip \(record.label)")
            checked += 1
        }
        print("AES-256-CTR RFC 3686: \(checked) vectors")
        #expect(checked == 3)
    }

    @Test func wrongSizesAreRefusedAndEmptyInputIsEmpty() throws {
        let key = SymmetricKey(copying: [UInt8](repeating: 7, count: 32))
        #expect(throws: CryptoError.invalidKeySize(expected: 32, actual: 16)) {
            try AES256CTR.xor([1, 2, 3], using: SymmetricKey(copying: [UInt8](repeating: 7, count: 16)), counterBlock: [UInt8](repeating: 0, count: 16))
        }
        #expect(throws: CryptoError.invalidNonceSize(expected: 16, actual: 12)) {
            try AES256CTR.xor([1, 2, 3], using: key, counterBlock: [UInt8](repeating: 0, count: 12))
        }
        #expect(try AES256CTR.xor([UInt8](), using: key, counterBlock: [UInt8](repeating: 0, count: 16)).isEmpty)
        // The key stream continues across blocks: 33 bytes at once equal the first 33 of 48.
        let long = try AES256CTR.xor([UInt8](repeating: 0, count: 48), using: key, counterBlock: [UInt8](repeating: 0, count: 16))
        #expect(try AES256CTR.xor([UInt8](repeating: 0, count: 33), using: key, counterBlock: [UInt8](repeating: 0, count: 16)) == Array(long.prefix(33)))
    }
}
