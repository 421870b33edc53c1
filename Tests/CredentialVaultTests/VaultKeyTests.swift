import Foundation
import Testing
@testable import CredentialVault
import VaultCrypto

@Suite struct VaultKeyTests {
    @Test func wrongKeyFileIsWrongKey() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let store = try SecretStore.create(in: temp.child("v"), key: try Fixtures.keyFile("alice.key", in: temp), options: .testing())
        try store.put(NewEntry(name: "t", secret: secret("x")))
        let error = expectVaultError(.wrongKey) {
            try SecretStore.open(in: temp.child("v"), key: try Fixtures.keyFile("bob.key", in: temp), options: .testing())
        }
        #expect(error?.description.lowercased().contains("key") == true)
    }

    @Test func keyFilesOfWrongLengthAreInvalid() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        for name in ["short-31-bytes.key", "long-33-bytes.key"] {
            let error = expectVaultError(.invalidKey) { try Fixtures.keyFile(name, in: temp) }
            #expect(error?.message.contains("exactly 32 bytes") == true)
        }
        expectVaultError(.invalidKey) { try SecretStore.create(in: temp.child("v"), key: .keyMaterial(secret("short")), options: .testing()) }
    }

    @Test func wrongAndEmptyPassphrases() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        _ = try SecretStore.create(in: temp.child("v"), key: try Fixtures.passphrase(), options: .testing())
        expectVaultError(.wrongKey) { try SecretStore.open(in: temp.child("v"), key: .passphrase(secret("wrong horse")), options: .testing()) }
        expectVaultError(.invalidKey) { try SecretStore.open(in: temp.child("v"), key: .passphrase(.empty), options: .testing()) }
        expectVaultError(.invalidKey) { try SecretStore.create(in: temp.child("w"), key: .passphrase(.empty), options: .testing()) }
        #expect(try SecretStore.open(in: temp.child("v"), key: try Fixtures.passphrase(), options: .testing()).list().isEmpty)
    }

    @Test func keyFileForAPassphraseVaultSaysWhichKeyIsNeeded() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        _ = try SecretStore.create(in: temp.child("v"), key: try Fixtures.passphrase(), options: .testing())
        let error = expectVaultError(.wrongKey) {
            try SecretStore.open(in: temp.child("v"), key: try Fixtures.keyFile("alice.key", in: temp), options: .testing())
        }
        #expect(error?.message.contains("passphrase") == true)
    }

    @Test func passphraseVaultAtStandardPolicyIsRefusedByNothingButTheKey() throws {
        // A vault made under the fast test policy is below the standard floor: a real build refuses it.
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        _ = try SecretStore.create(in: temp.child("v"), key: try Fixtures.passphrase(), options: .testing())
        expectVaultError(.kdfOutsidePolicy) { try SecretStore.open(in: temp.child("v"), key: try Fixtures.passphrase()) }
    }

    @Test func generatedKeyFileIsPrivateAndNeverOverwritten() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let path = temp.child("new.key")
        try VaultKey.generateKeyFile(path: path)
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        #expect((attributes[.size] as? Int) == 32)
        let first = try Data(contentsOf: URL(fileURLWithPath: path))
        expectVaultError(.alreadyExists) { try VaultKey.generateKeyFile(path: path) }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == first)
        _ = try VaultKey.fromKeyFile(path: path)
    }

    @Test func aFirstLaunchMakesTheKeyFileInOneCallAndLaterLaunchesReadIt() async throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let path = temp.child("config/app/vault.key")
        // Eight first launches at once: one key between them, every one of them gets it.
        let keys = try await withThrowingTaskGroup(of: [UInt8].self) { group in
            for _ in 0..<8 {
                group.addTask {
                    guard case let .keyMaterial(bytes) = try VaultKey.fromKeyFile(path: path, createIfMissing: true) else { return [] }
                    return bytes.withUnsafeBytes { Array($0) }
                }
            }
            return try await group.reduce(into: [[UInt8]]()) { $0.append($1) }
        }
        #expect(Set(keys).count == 1 && keys[0].count == 32)
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        #expect((try FileManager.default.attributesOfItem(atPath: temp.child("config/app"))[.posixPermissions] as? Int) == 0o700)
        // An existing key file is read and checked, never replaced.
        chmod(path, 0o644)
        expectVaultError(.insecurePermissions) { try VaultKey.fromKeyFile(path: path, createIfMissing: true) }
        #expect(Array(try Data(contentsOf: URL(fileURLWithPath: path))) == keys[0])
    }

    @Test func groupReadableKeyFileIsRefused() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let path = try Fixtures.privateCopy("keys/alice.key", into: temp)
        chmod(path, 0o640)
        let error = expectVaultError(.insecurePermissions) { try VaultKey.fromKeyFile(path: path) }
        #expect(error?.fix?.contains("chmod") == true)
    }
}
