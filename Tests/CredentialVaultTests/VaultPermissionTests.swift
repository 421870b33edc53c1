import Foundation
import Testing
import TestScheduling
@testable import CredentialVault
import VaultCrypto

@Suite(.blockingWork) struct VaultPermissionTests {
    @Test func groupReadableVaultIsRefusedWithAFix() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let key = try Fixtures.keyFile("alice.key", in: temp)
        let store = try SecretStore.create(in: temp.child("v"), key: key, options: .testing())
        chmod(store.vaultPath, 0o640)
        let error = expectVaultError(.insecurePermissions) { try SecretStore.open(in: temp.child("v"), key: key, options: .testing()) }
        #expect(error?.fix?.contains("chmod") == true)
        #expect(error?.path != nil)
    }

    @Test func openDirectoryMustBePrivate() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let key = try Fixtures.keyFile("alice.key", in: temp)
        _ = try SecretStore.create(in: temp.child("v"), key: key, options: .testing())
        chmod(temp.child("v"), 0o755)
        expectVaultError(.insecurePermissions) { try SecretStore.open(in: temp.child("v"), key: key, options: .testing()) }
    }

    @Test func symlinkedVaultFileIsRefused() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let key = try Fixtures.keyFile("alice.key", in: temp)
        let real = try SecretStore.create(in: temp.child("real"), key: key, options: .testing())
        try FileManager.default.createDirectory(atPath: temp.child("link"), withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try FileManager.default.createSymbolicLink(atPath: temp.child("link/secrets.vault"), withDestinationPath: real.vaultPath)
        expectVaultError(.insecurePermissions) { try SecretStore.open(in: temp.child("link"), key: key, options: .testing()) }
    }

    @Test func createdFilesArePrivateWhateverTheUmask() throws {
        // umask is process-wide, so the check runs in a child process with umask 000.
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let keyPath = try Fixtures.privateCopy("keys/alice.key", into: temp)
        let directory = temp.child("fresh/v")
        let script = "umask 000; exec \"$0\" \"$@\""
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", script, try BuiltProducts.path(of: "VaultTestWorker"), "create", directory, keyPath, "x", "1"]
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        for (path, mode) in [(directory, 0o700), (directory + "/secrets.vault", 0o600), (directory + "/secrets.lock", 0o600)] {
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            #expect((attributes[.posixPermissions] as? Int) == mode, "\(path)")
        }
    }
}
