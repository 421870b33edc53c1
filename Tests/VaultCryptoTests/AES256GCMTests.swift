import Foundation
import Testing
@testable import VaultCrypto

/// AES-256-GCM refuses every altered input and every non-standard size, and hands out
/// no plaintext unless the tag verified.
@Suite struct AES256GCMTests {
    let key: SymmetricKey
    let plaintext = Array("attack at dawn, bring the credentials".utf8)
    let aad = Array("vault-id:1234 generation:7".utf8)
    let box: AES256GCM.SealedBox

    init() throws {
        key = try SymmetricKey.generate()
        box = try AES256GCM.seal(plaintext, using: key, authenticating: aad)
    }

    /// Opens `candidate` expecting `authenticationFailure` and no returned value.
    private func expectAuthenticationFailure(_ candidate: AES256GCM.SealedBox, key: SymmetricKey? = nil,
                                             aad: [UInt8]? = nil, sourceLocation: SourceLocation = #_sourceLocation) {
        var opened: SecureBytes?
        #expect(throws: CryptoError.authenticationFailure, sourceLocation: sourceLocation) {
            opened = try AES256GCM.open(candidate, using: key ?? self.key, authenticating: aad ?? self.aad)
        }
        #expect(opened == nil, sourceLocation: sourceLocation)
    }

    private static func flipBit(_ bytes: [UInt8], at index: Int, bit: Int = 0) -> [UInt8] {
        var copy = bytes
        copy[index] ^= UInt8(1) << UInt8(bit)
        return copy
    }

    @Test func roundTripRecoversPlaintext() throws {
        #expect(try AES256GCM.open(box, using: key, authenticating: aad).array == plaintext)
        #expect(box.ciphertext.count == plaintext.count)
        #expect(box.tag.count == AES256GCM.tagByteCount)
        #expect(box.ciphertext != plaintext)
    }

    @Test func combinedFormRoundTrips() throws {
        let parsed = try AES256GCM.SealedBox(combined: box.combined)
        #expect(parsed == box)
        #expect(try AES256GCM.open(parsed, using: key, authenticating: aad).array == plaintext)
    }

    @Test func combinedShorterThanNonceAndTagIsRejected() {
        #expect(throws: CryptoError.invalidInputSize(what: "sealed box", actual: 27)) {
            try AES256GCM.SealedBox(combined: Array(box.combined.prefix(27)))
        }
    }

    @Test func openRejectsWrongKey() throws {
        expectAuthenticationFailure(box, key: try SymmetricKey.generate())
    }

    @Test func openRejectsKeyDifferingInOneBit() throws {
        let altered = key.bytes.withUnsafeBytes { Self.flipBit(Array($0), at: 31, bit: 7) }
        expectAuthenticationFailure(box, key: SymmetricKey(copying: altered))
    }

    @Test func openRejectsWrongAAD() {
        expectAuthenticationFailure(box, aad: Self.flipBit(aad, at: 0))
        expectAuthenticationFailure(box, aad: [])
        expectAuthenticationFailure(box, aad: aad + [0])
    }

    @Test func openRejectsFlippedCiphertextBit() throws {
        for index in [0, box.ciphertext.count / 2, box.ciphertext.count - 1] {
            let altered = try AES256GCM.SealedBox(nonce: box.nonce, ciphertext: Self.flipBit(box.ciphertext, at: index, bit: 3),
                                                  tag: box.tag)
            expectAuthenticationFailure(altered)
        }
    }

    @Test func openRejectsTruncatedOrExtendedCiphertext() throws {
        expectAuthenticationFailure(try AES256GCM.SealedBox(nonce: box.nonce, ciphertext: box.ciphertext.dropLast(), tag: box.tag))
        expectAuthenticationFailure(try AES256GCM.SealedBox(nonce: box.nonce, ciphertext: box.ciphertext + [0], tag: box.tag))
    }

    @Test func openRejectsFlippedTagBit() throws {
        for index in 0..<AES256GCM.tagByteCount {
            let altered = try AES256GCM.SealedBox(nonce: box.nonce, ciphertext: box.ciphertext,
                                                  tag: Self.flipBit(box.tag, at: index, bit: index % 8))
            expectAuthenticationFailure(altered)
        }
    }

    @Test func openRejectsFlippedNonceBit() throws {
        for index in 0..<AES256GCM.nonceByteCount {
            let nonce = try AES256GCM.Nonce(bytes: Self.flipBit(box.nonce.bytes, at: index, bit: 5))
            expectAuthenticationFailure(try AES256GCM.SealedBox(nonce: nonce, ciphertext: box.ciphertext, tag: box.tag))
        }
    }

    @Test(arguments: [0, 1, 4, 15])
    func truncatedTagIsRejected(length: Int) {
        // OpenSSL would verify a correct prefix (SECURITY.md pitfall 2); the API must not get that far.
        #expect(throws: CryptoError.invalidTagSize(expected: 16, actual: length)) {
            try AES256GCM.SealedBox(nonce: box.nonce, ciphertext: box.ciphertext, tag: Array(box.tag.prefix(length)))
        }
    }

    @Test func seventeenByteTagIsRejected() {
        #expect(throws: CryptoError.invalidTagSize(expected: 16, actual: 17)) {
            try AES256GCM.SealedBox(nonce: box.nonce, ciphertext: box.ciphertext, tag: box.tag + [0])
        }
    }

    @Test(arguments: [0, 8, 11, 13, 16])
    func wrongNonceLengthIsRejected(length: Int) {
        #expect(throws: CryptoError.invalidNonceSize(expected: 12, actual: length)) {
            try AES256GCM.Nonce(bytes: [UInt8](repeating: 0x42, count: length))
        }
    }

    @Test(arguments: [0, 16, 31, 33, 64])
    func wrongKeySizeIsRejected(size: Int) throws {
        let wrongKey = SymmetricKey(copying: [UInt8](repeating: 7, count: size))
        #expect(throws: CryptoError.invalidKeySize(expected: 32, actual: size)) {
            try AES256GCM.seal(plaintext, using: wrongKey)
        }
        #expect(throws: CryptoError.invalidKeySize(expected: 32, actual: size)) {
            try AES256GCM.open(box, using: wrongKey, authenticating: aad)
        }
    }

    @Test func emptyPlaintextRoundTrips() throws {
        let sealed = try AES256GCM.seal([UInt8](), using: key, authenticating: aad)
        #expect(sealed.ciphertext.isEmpty)
        let opened = try AES256GCM.open(sealed, using: key, authenticating: aad)
        #expect(opened.isEmpty)
        // With no ciphertext the tag alone authenticates: it must still catch a wrong AAD or tag.
        expectAuthenticationFailure(sealed, aad: [])
        expectAuthenticationFailure(try AES256GCM.SealedBox(nonce: sealed.nonce, ciphertext: [],
                                                            tag: Self.flipBit(sealed.tag, at: 15, bit: 7)))
    }

    @Test func emptyPlaintextAndEmptyAADRoundTrip() throws {
        let sealed = try AES256GCM.seal([UInt8](), using: key)
        #expect(try AES256GCM.open(sealed, using: key).isEmpty)
    }

    @Test func oneMebibyteRoundTrips() throws {
        let large = try SecureRandom.bytes(count: 1 << 20)
        let sealed = try AES256GCM.seal(large, using: key, authenticating: aad)
        #expect(sealed.ciphertext.count == large.count)
        #expect(try AES256GCM.open(sealed, using: key, authenticating: aad).array == large)
        var altered = sealed.ciphertext
        altered[altered.count - 1] ^= 0x80
        expectAuthenticationFailure(try AES256GCM.SealedBox(nonce: sealed.nonce, ciphertext: altered, tag: sealed.tag))
    }

    @Test func sealWithoutNonceUsesFreshRandomNonces() throws {
        let first = try AES256GCM.seal(plaintext, using: key)
        let second = try AES256GCM.seal(plaintext, using: key)
        #expect(first.nonce != second.nonce)
        #expect(first.ciphertext != second.ciphertext)
    }

    // MARK: The backend never leaves plaintext behind

    @Test func backendWipesPlaintextBufferWhenTagFails() throws {
        var badTag = box.tag
        badTag[0] ^= 1
        var buffer = [UInt8](repeating: 0xAA, count: box.ciphertext.count)
        #expect(throws: CryptoError.authenticationFailure) {
            try callBackendOpen(tag: badTag, into: &buffer)
        }
        // EVP_DecryptUpdate wrote plaintext here before the tag check; the shim must wipe it.
        #expect(buffer.allSatisfy { $0 == 0 }, "plaintext buffer after a failed open: \(Hex.encode(buffer.prefix(16)))…")
    }

    @Test func backendWipesPlaintextBufferWhenAADIsWrong() throws {
        var buffer = [UInt8](repeating: 0xAA, count: box.ciphertext.count)
        #expect(throws: CryptoError.authenticationFailure) {
            try callBackendOpen(tag: box.tag, aad: [1, 2, 3], into: &buffer)
        }
        #expect(buffer.allSatisfy { $0 == 0 })
    }

    @Test func backendWritesPlaintextWhenTagVerifies() throws {
        // The control for the two tests above: the same call really does write into the buffer.
        var buffer = [UInt8](repeating: 0xAA, count: box.ciphertext.count)
        try callBackendOpen(tag: box.tag, into: &buffer)
        #expect(buffer == plaintext)
    }

    private func callBackendOpen(tag: [UInt8], aad: [UInt8]? = nil, into buffer: inout [UInt8]) throws {
        let aad = aad ?? self.aad
        try key.bytes.withUnsafeBytes { keyBuffer in
            try box.nonce.withUnsafeBytes { nonceBuffer in
                try aad.withUnsafeBytes { aadBuffer in
                    try box.ciphertext.withUnsafeBytes { cipherBuffer in
                        try tag.withUnsafeBytes { tagBuffer in
                            try buffer.withUnsafeMutableBytes { plainBuffer in
                                try OpenSSLBackend.aesGCMOpen(key: keyBuffer, nonce: nonceBuffer, aad: aadBuffer,
                                                              ciphertext: cipherBuffer, tag: tagBuffer, plaintext: plainBuffer)
                            }
                        }
                    }
                }
            }
        }
    }
}
