#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
import TestScheduling
@testable import CredentialVault

/// A new passphrase has a length floor with an explicit override; the passphrase variables
/// leave the environment at start-up.
@Suite(.blockingWork) struct PassphraseHandlingTests {
    @Test func initAndPasswdRefuseAShortPassphraseUnlessAllowedAndOpeningNeverRefuses() throws {
        let sandbox = try CLISandbox()
        defer { sandbox.cleanUp() }
        let short = ["VAULT_PASSPHRASE": "eleven-byte"]          // 11 bytes
        let refused = try sandbox.run(["init"], environment: short)
        #expect(refused.status == 64, "\(refused.stderrText)")
        #expect(refused.stderrText.contains("at least 12"))
        #expect(refused.stderrText.contains("--weak-passphrase"))
        #expect(!refused.stderrText.contains("eleven-byte"), "the passphrase is never shown")
        #expect(!FileManager.default.fileExists(atPath: sandbox.vaultFile))
        // Exactly 12 bytes is enough.
        let twelve = ["VAULT_PASSPHRASE": "twelve-bytes"]
        let other = try CLISandbox()
        defer { other.cleanUp() }
        #expect(try other.run(["init"], environment: twelve).status == 0)

        #expect(try sandbox.run(["init", "--weak-passphrase"], environment: short).status == 0)
        // Opening a vault never judges its passphrase.
        #expect(try sandbox.run(["add", "a"], stdin: Data("v".utf8), environment: short).status == 0)
        // passwd: the new passphrase is judged, with the same override.
        let weakNew = short.merging(["VAULT_NEW_PASSPHRASE": "short"]) { $1 }
        let refusedNew = try sandbox.run(["passwd"], environment: weakNew)
        #expect(refusedNew.status == 64, "\(refusedNew.stderrText)")
        #expect(try sandbox.run(["get", "a"], environment: short).stdout == Data("v".utf8), "the old passphrase still opens it")
        #expect(try sandbox.run(["passwd", "--weak-passphrase"], environment: weakNew).status == 0)
        #expect(try sandbox.run(["get", "a"], environment: ["VAULT_PASSPHRASE": "short"]).stdout == Data("v".utf8))
    }

    @Test func libraryFloorAndOverride() throws {
        let temp = try TemporaryDirectoryForCLI()
        defer { temp.cleanUp() }
        var options = SecretStore.Options()
        options.kdfPolicy = .testing
        options.rollbackMemory = .disabled
        let weak = VaultKey.passphrase(SecureBytes(copying: Array("hunter2".utf8)))
        let error = #expect(throws: VaultError.self) { try SecretStore.create(in: temp.child("v"), key: weak, options: options) }
        #expect(error?.code == .invalidInput)
        #expect(!SecretStore.exists(in: temp.child("v")))
        options.allowsWeakPassphrase = true
        _ = try SecretStore.create(in: temp.child("v"), key: weak, options: options)
        options.allowsWeakPassphrase = false
        let opened = try SecretStore.open(in: temp.child("v"), key: weak, options: options)
        #expect(throws: VaultError.self) { try opened.changeKey(to: .passphrase(SecureBytes(copying: Array("also-weak".utf8)))) }
        try opened.changeKey(to: .passphrase(SecureBytes(copying: Array("a much longer passphrase".utf8))))
        #expect(PassphraseStrength.minimumBytes == 12)
    }

    @Test func passphraseVariablesLeaveTheEnvironmentAtStartUp() throws {
        let sandbox = try CLISandbox()
        defer { sandbox.cleanUp() }
        let passphrase = "env-secret-7f3a9c2e"
        let environment = ["VAULT_PASSPHRASE": passphrase, "VAULT_NEW_PASSPHRASE": "new-secret-88d1b04c"]
        #expect(try sandbox.run(["init"], environment: environment).status == 0)
        // `add` waits for its secret on standard input: meanwhile, read its environment.
        let running = try sandbox.start(["add", "a"], environment: environment)
        let environ = "/proc/\(running.pid)/environ"
        let deadline = Date().addingTimeInterval(15)
        var clean = false
        var polls = 0
        while Date() < deadline && polls < 3000 {
            polls += 1
            if let data = FileManager.default.contents(atPath: environ), !data.isEmpty {
                let text = String(decoding: data, as: UTF8.self)
                if !text.contains(passphrase) && !text.contains("new-secret-88d1b04c") && !text.contains("VAULT_PASSPHRASE=") {
                    clean = true
                    break
                }
            }
            usleep(5_000)
        }
        running.send(Data("value".utf8))
        running.closeInput()
        let result = running.finish()
        #expect(clean, "the passphrase stayed in /proc/PID/environ")
        #expect(result.status == 0, "\(result.stderrText)")
        #expect(try sandbox.run(["get", "a"], environment: environment).stdout == Data("value".utf8),
                "the passphrase taken from the environment still opens the vault")
    }
}

/// A private temporary directory for library calls from the CLI test target.
struct TemporaryDirectoryForCLI {
    let path: String
    init() throws {
        path = NSTemporaryDirectory() + "vault-cli-lib-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }
    func child(_ name: String) -> String { path + "/" + name }
    func cleanUp() { try? FileManager.default.removeItem(atPath: path) }
}
