import Foundation
import Testing
import VaultCrypto

/// The random generator.
@Suite struct SecureRandomTests {
    @Test func twelveByteOutputsNeverRepeatOverAThousandCalls() throws {
        var seen = Set<[UInt8]>()
        for _ in 0..<1000 {
            let bytes = try SecureRandom.bytes(count: 12)
            #expect(bytes.count == 12)
            seen.insert(bytes)
        }
        #expect(seen.count == 1000)
    }

    @Test func randomNoncesNeverRepeatOverAThousandCalls() throws {
        var seen = Set<AES256GCM.Nonce>()
        for _ in 0..<1000 { seen.insert(try AES256GCM.Nonce()) }
        #expect(seen.count == 1000)
    }

    @Test func outputIsNotAllZeros() throws {
        // 64 zero bytes by chance has probability 2^-512: a failure means a zero-filled buffer escaped.
        #expect(try SecureRandom.bytes(count: 64).contains { $0 != 0 })
        #expect(try SecureRandom.secureBytes(count: 64).array.contains { $0 != 0 })
    }

    @Test func zeroCountGivesEmptyOutput() throws {
        #expect(try SecureRandom.bytes(count: 0).isEmpty)
        #expect(try SecureRandom.secureBytes(count: 0).isEmpty)
    }

    @Test func generatedKeysDiffer() throws {
        let a = try SymmetricKey.generate(), b = try SymmetricKey.generate()
        #expect(a.byteCount == 32)
        #expect(a != b)
    }
}
