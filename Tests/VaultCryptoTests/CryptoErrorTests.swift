import Foundation
import Testing
@testable import VaultCrypto

/// Error and description text never carries secret bytes.
@Suite struct CryptoErrorTests {
    /// A recognisable key whose hex would stand out in any message.
    static let keyBytes: [UInt8] = (0..<32).map { UInt8(truncatingIfNeeded: 0xA0 + $0 * 7) }

    /// Every rendering of `value` that a log line or crash report might use.
    private static func renderings(_ value: Any) -> [String] {
        var dumped = ""
        dump(value, to: &dumped)
        return ["\(value)", String(reflecting: value), dumped, (value as? Error)?.localizedDescription ?? ""]
    }

    private static func expectNoKeyMaterial(_ value: Any, key: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) {
        let hex = Hex.encode(key)
        // Any 8-byte run of the key, in either case, or as Swift prints an array.
        let needles = stride(from: 0, to: key.count - 7, by: 4).flatMap { start -> [String] in
            let run = String(hex.dropFirst(start * 2).prefix(16))
            return [run, run.uppercased()]
        } + [key.prefix(4).map(String.init).joined(separator: ", ")]
        for text in renderings(value) {
            for needle in needles {
                #expect(!text.contains(needle), "\"\(text)\" contains key material", sourceLocation: sourceLocation)
            }
        }
    }

    @Test func errorsFromKeyedOperationsContainNoKeyBytes() throws {
        let key = SymmetricKey(copying: Self.keyBytes)
        let box = try AES256GCM.seal(Array("secret".utf8), using: key)
        var errors: [CryptoError] = []

        func collect(_ body: () throws -> Void) {
            do { try body() } catch let error as CryptoError { errors.append(error) } catch {
                Issue.record("unexpected error type \(type(of: error))")
            }
        }
        collect { _ = try AES256GCM.open(box, using: SymmetricKey(copying: Self.keyBytes.reversed())) }
        collect { _ = try AES256GCM.seal([1], using: SymmetricKey(copying: Self.keyBytes.dropLast())) }
        collect { _ = try AES256GCM.open(box, using: SymmetricKey(copying: Self.keyBytes + [0])) }
        collect { _ = try AES256GCM.Nonce(bytes: Self.keyBytes.prefix(11)) }
        collect { _ = try AES256GCM.SealedBox(nonce: box.nonce, ciphertext: box.ciphertext, tag: Array(Self.keyBytes.prefix(15))) }
        collect { _ = try HKDFSHA256.deriveKey(inputKeyMaterial: Self.keyBytes, salt: Self.keyBytes, outputByteCount: 8161) }
        collect { _ = try Scrypt.deriveKey(password: Self.keyBytes, salt: Self.keyBytes,
                                           parameters: .init(logN: 40, r: 8, p: 1), outputByteCount: 32) }
        #expect(errors.count == 7)
        for error in errors { Self.expectNoKeyMaterial(error, key: Self.keyBytes) }
    }

    @Test func keysAndSecureBytesNeverPrintTheirBytes() {
        Self.expectNoKeyMaterial(SymmetricKey(copying: Self.keyBytes), key: Self.keyBytes)
        Self.expectNoKeyMaterial(SecureBytes(copying: Self.keyBytes), key: Self.keyBytes)
    }

    @Test func openSSLErrorDescriptionNamesTheOperation() {
        let error = OpenSSLBackend.drainErrors(operation: "unit test")
        #expect(error.description.lowercased().contains("unit test"))
        #expect(!error.isAuthenticationFailure)
    }

    @Test func authenticationFailureIsRecognisable() {
        #expect(CryptoError.authenticationFailure.isAuthenticationFailure)
        #expect(CryptoError.authenticationFailure.description.lowercased().contains("authentication failed"))
    }
}
