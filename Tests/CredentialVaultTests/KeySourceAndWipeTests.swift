import Foundation
import Testing
@testable import CredentialVault
import VaultCrypto

/// `VaultKey.fromPassphraseFile` and the key-less `SecretStore.wipe(in:)`.
@Suite struct PassphraseFileTests {
    func write(_ bytes: [UInt8], mode: Int, in temp: TemporaryDirectory) -> String {
        let path = temp.child("pass")
        _ = FileManager.default.createFile(atPath: path, contents: Data(bytes), attributes: [.posixPermissions: mode])
        return path
    }

    @Test func dropsOneTrailingNewlineOnly() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        for (contents, expected) in [("pw\n", "pw"), ("pw\r\n", "pw"), ("pw", "pw"), ("pw\n\n", "pw\n"), (" pw ", " pw ")] {
            let key = try VaultKey.fromPassphraseFile(path: write(Array(contents.utf8), mode: 0o600, in: temp))
            guard case .passphrase(let bytes) = key else {
                Issue.record("not a passphrase")
                continue
            }
            #expect(bytes == secret(expected))
            try FileManager.default.removeItem(atPath: temp.child("pass"))
        }
    }

    @Test func refusesGroupReadableAndEmptyFiles() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        expectVaultError(.insecurePermissions) { try VaultKey.fromPassphraseFile(path: write(Array("pw".utf8), mode: 0o640, in: temp)) }
        try FileManager.default.removeItem(atPath: temp.child("pass"))
        expectVaultError(.invalidKey) { try VaultKey.fromPassphraseFile(path: write(Array("\n".utf8), mode: 0o600, in: temp)) }
        expectVaultError(.notFound) { try VaultKey.fromPassphraseFile(path: temp.child("missing")) }
    }
}

@Suite struct KeylessWipeTests {
    @Test func wipesWithoutTheKeyAndReportsWhenNothingWasThere() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let directory = temp.child("v")
        let store = try SecretStore.create(in: directory, key: Fixtures.keyFile("alice.key", in: temp), options: .testing())
        try store.put(NewEntry(name: "a", secret: secret("value")))
        #expect(try SecretStore.wipe(in: directory, lockTimeout: .seconds(1)))
        #expect(!SecretStore.exists(in: directory))
        // Only the (empty) lock file stays: nothing that held a secret.
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == [SecretStore.FileNames.lock])
        #expect(try !SecretStore.wipe(in: directory, lockTimeout: .seconds(1)))
    }
}

/// `wipe` applies the folder and link checks of every other command before it zeroes anything.
@Suite struct WipeSafetyTests {
    @Test func wipeRefusesAFolderOthersCanWriteTo() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let directory = temp.child("v")
        let store = try SecretStore.create(in: directory, key: Fixtures.keyFile("alice.key", in: temp), options: .testing())
        try store.put(NewEntry(name: "a", secret: secret("value")))
        let before = try Data(contentsOf: URL(fileURLWithPath: store.vaultPath))
        #expect(chmod(directory, 0o777) == 0)
        expectVaultError(.insecurePermissions) { try SecretStore.wipe(in: directory, lockTimeout: .seconds(1)) }
        #expect(try Data(contentsOf: URL(fileURLWithPath: store.vaultPath)) == before, "nothing was zeroed")
    }

    @Test func wipeRefusesAHardLinkedVaultAndLeavesTheOtherFileIntact() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let directory = temp.child("v")
        let store = try SecretStore.create(in: directory, key: Fixtures.keyFile("alice.key", in: temp), options: .testing())
        // Another name for the same bytes: zeroing the vault would zero this unrelated file too.
        let other = temp.child("unrelated")
        let before = try Data(contentsOf: URL(fileURLWithPath: store.vaultPath))
        #expect(link(store.vaultPath, other) == 0)
        let error = expectVaultError(.insecurePermissions) { try SecretStore.wipe(in: directory, lockTimeout: .seconds(1)) }
        #expect(error?.message.contains("hard links") == true)
        #expect(try Data(contentsOf: URL(fileURLWithPath: other)) == before)
        #expect(SecretStore.exists(in: directory))
        // The open-store form refuses too.
        expectVaultError(.insecurePermissions) { try store.wipe() }
        #expect(try Data(contentsOf: URL(fileURLWithPath: other)) == before)
    }

    @Test func wipeRefusesAnUnsafeAncestor() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let directory = temp.child("open/v")
        _ = try SecretStore.create(in: directory, key: Fixtures.keyFile("alice.key", in: temp), options: .testing())
        #expect(chmod(temp.child("open"), 0o777) == 0)
        expectVaultError(.insecurePermissions) { try SecretStore.wipe(in: directory, lockTimeout: .seconds(1)) }
        #expect(SecretStore.exists(in: directory))
    }
}

/// `SecretStore.destroyKeyFile(at:)`: the erase that holds, with every check done before a byte is written.
@Suite struct KeyFileDestructionTests {
    @Test func destroysAKeyFileSoItsVaultCanNeverOpenAgain() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let keyPath = try Fixtures.privateCopy("keys/alice.key", into: temp)
        _ = try SecretStore.create(in: temp.child("v"), key: VaultKey.fromKeyFile(path: keyPath), options: .testing())
        try SecretStore.destroyKeyFile(at: keyPath)
        #expect(!FileManager.default.fileExists(atPath: keyPath))
        expectVaultError(.notFound) { try SecretStore.destroyKeyFile(at: keyPath) }
    }

    @Test func refusesWhatIsNotPlainlyAPrivateKeyFileAndChangesNothing() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let keyPath = try Fixtures.privateCopy("keys/alice.key", into: temp)
        let original = try Data(contentsOf: URL(fileURLWithPath: keyPath))
        // A second hard link: zeroing would zero the other name too.
        let other = temp.child("other-name")
        #expect(link(keyPath, other) == 0)
        let linked = expectVaultError(.insecurePermissions) { try SecretStore.destroyKeyFile(at: keyPath) }
        #expect(linked?.message.contains("hard links") == true)
        #expect(try Data(contentsOf: URL(fileURLWithPath: other)) == original)
        #expect(unlink(other) == 0)
        // A symlink to it.
        let link = temp.child("link.key")
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: keyPath)
        expectVaultError(.insecurePermissions) { try SecretStore.destroyKeyFile(at: link) }
        // Readable by others.
        #expect(chmod(keyPath, 0o644) == 0)
        expectVaultError(.insecurePermissions) { try SecretStore.destroyKeyFile(at: keyPath) }
        #expect(chmod(keyPath, 0o600) == 0)
        // Not 32 bytes: a mistyped path to some other private file.
        let notAKey = temp.child("notes.txt")
        _ = FileManager.default.createFile(atPath: notAKey, contents: Data(repeating: 7, count: 33), attributes: [.posixPermissions: 0o600])
        expectVaultError(.invalidKey) { try SecretStore.destroyKeyFile(at: notAKey) }
        #expect(try Data(contentsOf: URL(fileURLWithPath: notAKey)) == Data(repeating: 7, count: 33))
        // In a folder others can write to without the sticky bit.
        let open = temp.child("open")
        try FileManager.default.createDirectory(atPath: open, withIntermediateDirectories: false)
        #expect(chmod(open, 0o777) == 0)
        let exposed = try Fixtures.privateCopy("keys/alice.key", into: temp, as: "open/alice.key")
        expectVaultError(.insecurePermissions) { try SecretStore.destroyKeyFile(at: exposed) }
        #expect(try Data(contentsOf: URL(fileURLWithPath: exposed)) == original)
        #expect(try Data(contentsOf: URL(fileURLWithPath: keyPath)) == original)
    }
}
