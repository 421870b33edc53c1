import VaultCrypto

/// A quick end-to-end check that the crypto layer works against the linked OpenSSL.
public enum CryptoSelfCheck {
    /// Runs seal/open, tamper detection, HKDF and scrypt once each.
    /// - Returns: One human-readable line per check.
    /// - Throws: the first failure.
    public static func run() throws -> [String] {
        var lines = ["crypto library: \(CryptoLibrary.versionText)"]
        let key = try SymmetricKey.generate()
        let message = Array("self-check".utf8)
        let box = try AES256GCM.seal(message, using: key, authenticating: Array("aad".utf8))
        let opened = try AES256GCM.open(box, using: key, authenticating: Array("aad".utf8))
        guard opened == SecureBytes(copying: message) else { throw SelfCheckFailure(check: "AES-256-GCM round trip") }
        lines.append("AES-256-GCM seal/open: ok")
        var tampered = box.ciphertext
        tampered[0] ^= 1
        do {
            _ = try AES256GCM.open(try AES256GCM.SealedBox(nonce: box.nonce, ciphertext: tampered, tag: box.tag),
                                   using: key, authenticating: Array("aad".utf8))
            throw SelfCheckFailure(check: "AES-256-GCM tamper detection")
        } catch let error as CryptoError where error.isAuthenticationFailure {
            lines.append("AES-256-GCM rejects a flipped bit: ok")
        }
        _ = try HKDFSHA256.deriveKey(inputKeyMaterial: key.bytes, info: Array("label".utf8), outputByteCount: 32)
        lines.append("HKDF-SHA256: ok")
        _ = try Scrypt.deriveKey(password: Array("pw".utf8), salt: try SecureRandom.bytes(count: 32),
                                 parameters: .init(logN: 10, r: 8, p: 1), outputByteCount: 32)
        lines.append("scrypt: ok")
        return lines
    }
}

/// A self-check step that produced a wrong answer.
public struct SelfCheckFailure: Error, Sendable, CustomStringConvertible {
    /// The step that failed.
    public let check: String
    /// "self-check failed: <step>".
    public var description: String { "self-check failed: \(check)" }
}
