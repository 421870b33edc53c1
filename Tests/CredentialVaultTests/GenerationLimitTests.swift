@testable import CredentialVault
import Foundation
import Testing
import VaultCrypto

/// A write at the largest generation fails with a clear error and changes nothing; it never
/// traps on the arithmetic ("arithmetic overflow", SIGILL, before).
@Suite struct GenerationLimitTests {
    @Test func theNextGenerationAfterTheLargestIsAnErrorNotATrap() throws {
        #expect(try SecretStore.nextGeneration(after: 41, path: nil) == 42)
        #expect(throws: VaultError.self) { _ = try SecretStore.nextGeneration(after: .max, path: nil) }
        do {
            _ = try SecretStore.nextGeneration(after: .max, path: "/v/secrets.vault")
        } catch VaultError.Code.corrupt {
            // `catch VaultError.Code.x` matches through `~=`.
        }
    }

    @Test func putUpdateAndRotateAtTheLargestGenerationFailAndLeaveTheFile() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let key = VaultKey.keyMaterial(SecureBytes(copying: try SecureRandom.bytes(count: 32)))
        let store = try SecretStore.create(in: directory.path, key: key, options: .testing())
        try store.put(NewEntry(name: "a", secret: SecureBytes(copying: Array("one".utf8))))
        // Rewrite the file, authenticated with the same key, at generation 2^64 − 1.
        let path = store.vaultPath
        let file = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        let (decoded, keys, kek) = try VaultFileCodec.decode(
            file, path: nil,
            kekProvider: { try KeyHierarchy.deriveKEK(key: key, kind: $0.kind, parameters: $0.scrypt, salt: $0.salt, policy: .standard, path: nil) },
            dataKeysProvider: { try DataKeys(dek: $0, vaultID: $1) })
        var image = decoded
        image.generation = .max
        try Data(try VaultFileCodec.encode(image, keys: keys, kek: kek)).write(to: URL(fileURLWithPath: path))
        let atLimit = try Data(contentsOf: URL(fileURLWithPath: path))

        let reopened = try SecretStore.open(in: directory.path, key: key, options: .testing())
        #expect(reopened.generation == .max)
        #expect(try reopened.secret(named: "a") == SecureBytes(copying: Array("one".utf8)), "reading still works")
        for write: () throws -> Void in [
            { try reopened.put(NewEntry(name: "b", secret: SecureBytes(copying: Array("two".utf8)))) },
            { try reopened.remove(named: "a") },
            { try reopened.rotate() },
        ] {
            #expect(throws: VaultError.self) { try write() }
            do { try write() } catch let error as VaultError { #expect(error.code == .corrupt) }
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == atLimit, "nothing on disk changed")
    }
}
