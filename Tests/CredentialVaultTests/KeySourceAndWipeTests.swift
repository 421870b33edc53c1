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
