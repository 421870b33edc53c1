import Foundation
import Testing
import TestScheduling
@testable import VaultCrypto

/// The Secret Service session key agreement (`dh-ietf1024-sha256-aes128-cbc-pkcs7`): fixed
/// vectors made once with Python's `cryptography` (Fixtures/secret-service-dh-ietf1024.json, its
/// generator beside it), peer values that must be refused, and agreement between two of ours.
@Suite struct SecretServiceKeyAgreementTests {
    /// RFC 2409 §6.2, the second Oakley group's prime.
    static let prime: [UInt8] = try! Hex.decode(
        "FFFFFFFFFFFFFFFFC90FDAA22168C234C4C6628B80DC1CD129024E088A67CC74020BBEA63B139B22514A08798E3404DD"
        + "EF9519B3CD3A431B302B0A6DF25F14374FE1356D6D51C245E485B576625E7EC6F44C42E9A637ED6B0BFF5CB6F406B7ED"
        + "EE386BFB5A899FA5AE9F24117C4B1FE649286651ECE65381FFFFFFFFFFFFFFFF")

    /// `prime` plus or minus a small number (no borrow or carry beyond the last byte: it ends in 0xFF).
    static func prime(adding delta: Int) -> [UInt8] {
        var bytes = prime
        bytes[bytes.count - 1] = UInt8(Int(bytes[bytes.count - 1]) + delta)
        return bytes
    }

    struct Fixture: Decodable {
        struct Case: Decodable {
            let name: String
            let privateKey: String
            let publicKey: String
            let peerPublicKey: String
            let sessionKey: String
            let sessionKeyFromUnpaddedSecret: String
        }
        let cases: [Case]
    }

    @Test func fixedVectorsFromAnIndependentImplementationMatch() throws {
        let url = try #require(Bundle.module.url(forResource: "secret-service-dh-ietf1024", withExtension: "json", subdirectory: "Fixtures"))
        let fixture = try JSONDecoder().decode(Fixture.self, from: Data(contentsOf: url))
        #expect(fixture.cases.count == 4)
        for vector in fixture.cases {
            let agreement = try SecretServiceKeyAgreement(privateKey: Hex.decode(vector.privateKey))
            #expect(agreement.publicKey == (try Hex.decode(vector.publicKey)), "\(vector.name)")
            let key = try agreement.sessionKey(peerPublicKey: Hex.decode(vector.peerPublicKey))
            #expect(key.count == 16)
            #expect(key.array == (try Hex.decode(vector.sessionKey)), "\(vector.name)")
        }
        // The cases that make the encodings matter are really there.
        let padded = try #require(fixture.cases.first { $0.name == "sharedSecretWithLeadingZero" })
        #expect(padded.sessionKey != padded.sessionKeyFromUnpaddedSecret)
        let shortPublic = try #require(fixture.cases.first { $0.name == "ownPublicKeyWithLeadingZero" })
        #expect(shortPublic.publicKey.count < 256)
        let longPeer = try #require(fixture.cases.first { $0.name == "peerKeyWithLeadingZeroByte" })
        #expect(longPeer.peerPublicKey.count == 258 && longPeer.peerPublicKey.hasPrefix("00"))
    }

    @Test func twoAgreementsDeriveTheSameKeyAndAThirdAnother() throws {
        let alice = try SecretServiceKeyAgreement()
        let bob = try SecretServiceKeyAgreement()
        let eve = try SecretServiceKeyAgreement()
        let aliceKey = try alice.sessionKey(peerPublicKey: bob.publicKey)
        #expect(aliceKey.count == SecretServiceKeyAgreement.sessionKeyByteCount)
        #expect(aliceKey == (try bob.sessionKey(peerPublicKey: alice.publicKey)))
        #expect(aliceKey != (try eve.sessionKey(peerPublicKey: bob.publicKey)))
        #expect(alice.publicKey != bob.publicKey)
        // The key works as the session cipher's key in both directions.
        let iv = try SecureRandom.bytes(count: 16)
        let sealed = try AES128CBC.encrypt(key: aliceKey, iv: iv, plaintext: SecureBytes(copying: Array("hunter2".utf8)))
        #expect(try AES128CBC.decrypt(key: bob.sessionKey(peerPublicKey: alice.publicKey), iv: iv, ciphertext: sealed).array
                == Array("hunter2".utf8))
    }

    @Test func publicValuesAreMinimalBigEndianInsideTheGroup() throws {
        for _ in 0..<8 {
            let value = try SecretServiceKeyAgreement().publicKey
            #expect((1...128).contains(value.count))
            #expect(value.first != 0)
            #expect(value.count < 128 || value.lexicographicallyPrecedes(Self.prime(adding: -1)))
        }
    }

    @Test func badPeerValuesAreRefused() throws {
        let agreement = try SecretServiceKeyAgreement()
        let refused: [(String, [UInt8])] = [
            ("empty", []),
            ("0", [0]),
            ("0 in 128 bytes", [UInt8](repeating: 0, count: 128)),
            ("1", [1]),
            ("1 after leading zeros", [UInt8](repeating: 0, count: 127) + [1]),
            ("p - 1", Self.prime(adding: -1)),
            ("p", Self.prime),
            ("2^1024", [0x01] + [UInt8](repeating: 0, count: 128)),
            ("2^1024 - 1", [UInt8](repeating: 0xFF, count: 128)),
            ("129 bytes with a non-zero first byte", [0x01] + Array(Self.prime(adding: -3))),
            ("too long: 257 bytes even with leading zeros", [UInt8](repeating: 0, count: 256) + [2]),
            ("1 MiB", [UInt8](repeating: 0x7F, count: 1 << 20)),
            // -2 is not a square modulo p (p ≡ 7 mod 8: 2 is one, -1 is not), so it lies outside
            // the subgroup of order q that g = 2 generates.
            ("p - 2, outside the subgroup", Self.prime(adding: -2)),
        ]
        for (name, value) in refused {
            do {
                _ = try agreement.sessionKey(peerPublicKey: value)
                Issue.record("peer value \(name) was accepted")
            } catch let error as CryptoError {
                #expect(error.isUnusableKey, "\(name): \(error)")
            }
        }
        // The agreement still works after the refusals.
        let other = try SecretServiceKeyAgreement()
        #expect(try agreement.sessionKey(peerPublicKey: other.publicKey) == other.sessionKey(peerPublicKey: agreement.publicKey))
    }

    @Test func leadingZerosOfAPeerValueAreAccepted() throws {
        let alice = try SecretServiceKeyAgreement()
        let bob = try SecretServiceKeyAgreement()
        let key = try alice.sessionKey(peerPublicKey: bob.publicKey)
        #expect(try alice.sessionKey(peerPublicKey: [0] + bob.publicKey) == key)
        #expect(try alice.sessionKey(peerPublicKey: [UInt8](repeating: 0, count: 256 - bob.publicKey.count) + bob.publicKey) == key)
    }

    @Test func privateValuesOutsideTheRangeAreRefusedAndNothingLeaks() throws {
        for bad in [[UInt8](), [0], [UInt8](repeating: 0xFF, count: 129)] {
            #expect(throws: CryptoError.self) { try SecretServiceKeyAgreement(privateKey: bad) }
        }
        let privateKey: [UInt8] = (0..<32).map { UInt8(truncatingIfNeeded: 0xA0 + $0 * 7) }
        let agreement = try SecretServiceKeyAgreement(privateKey: privateKey)
        var dumped = ""
        dump(agreement, to: &dumped)
        for text in ["\(agreement)", String(reflecting: agreement), dumped] {
            #expect(!text.lowercased().contains(Hex.encode(privateKey.prefix(8))))
            #expect(!text.lowercased().contains(Hex.encode(agreement.publicKey.prefix(8))))
        }
    }
}

/// The agreement against Python's `cryptography` live (OpenSSL underneath, but its own DH and
/// HKDF code paths): fresh keys on both sides, and a peer chosen so that the shared secret has a
/// leading zero byte, the 1-in-256 case where an unpadded encoding would give another key.
@Suite(.blockingWork) struct SecretServiceKeyAgreementPythonTests {
    static let script = """
        import json, sys
        from cryptography.hazmat.primitives.asymmetric import dh
        from cryptography.hazmat.primitives.kdf.hkdf import HKDF
        from cryptography.hazmat.primitives import hashes
        P = int("FFFFFFFFFFFFFFFFC90FDAA22168C234C4C6628B80DC1CD129024E088A67CC74020BBEA63B139B22514A08798E3404DD"
                "EF9519B3CD3A431B302B0A6DF25F14374FE1356D6D51C245E485B576625E7EC6F44C42E9A637ED6B0BFF5CB6F406B7ED"
                "EE386BFB5A899FA5AE9F24117C4B1FE649286651ECE65381FFFFFFFFFFFFFFFF", 16)
        numbers = dh.DHParameterNumbers(P, 2)
        params = numbers.parameters()
        ours = dh.DHPublicNumbers(int(sys.argv[2], 16), numbers).public_key()
        for attempt in range(20000):
            key = params.generate_private_key()
            shared = key.exchange(ours)
            if sys.argv[1] == "any" or shared[0] == 0:
                break
        else:
            sys.exit("no shared secret with a leading zero in 20000 tries")
        y = key.public_key().public_numbers().y
        okm = HKDF(algorithm=hashes.SHA256(), length=16, salt=None, info=None).derive(shared)
        print(json.dumps({"peer": y.to_bytes((y.bit_length() + 7) // 8, "big").hex(), "key": okm.hex(),
                          "leadingZero": shared[0] == 0, "secretLength": len(shared)}))
        """

    struct Answer: Decodable {
        let peer: String
        let key: String
        let leadingZero: Bool
        let secretLength: Int
    }

    /// Python's answer for our public value, or nil (after a skip message, a failure in CI)
    /// when python3 or its `cryptography` package is missing.
    static func python(_ mode: String, publicKey: [UInt8]) throws -> Answer? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script, mode, Hex.encode(publicKey)]
        let output = Pipe(), errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        do { try process.run() } catch {
            VectorFiles.reportMissing("python3 not found; needed for the Secret Service DH cross-check")
            return nil
        }
        let bytes = output.fileHandleForReading.readDataToEndOfFile()
        let messages = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            if messages.contains("ModuleNotFoundError") {
                VectorFiles.reportMissing("Python's cryptography package is missing (pip install cryptography)")
                return nil
            }
            Issue.record("python3 failed: \(messages)")
            return nil
        }
        return try JSONDecoder().decode(Answer.self, from: bytes)
    }

    @Test func freshKeysAgreeWithPythonCryptography() throws {
        for _ in 0..<3 {
            let agreement = try SecretServiceKeyAgreement()
            guard let answer = try Self.python("any", publicKey: agreement.publicKey) else { return }
            #expect(answer.secretLength == 128)
            #expect(try agreement.sessionKey(peerPublicKey: Hex.decode(answer.peer)).array == (try Hex.decode(answer.key)))
        }
    }

    @Test func aSharedSecretWithALeadingZeroIsPaddedAsPythonAndLibsecretPadIt() throws {
        let agreement = try SecretServiceKeyAgreement()
        guard let answer = try Self.python("leadingZero", publicKey: agreement.publicKey) else { return }
        #expect(answer.leadingZero)
        #expect(try agreement.sessionKey(peerPublicKey: Hex.decode(answer.peer)).array == (try Hex.decode(answer.key)))
    }
}
