import Foundation
import Testing
import TestScheduling

/// `vault wipe` and `--destroy-key-file`; the help says what a wipe cannot erase.
@Suite(.blockingWork) struct WipeCommandTests {
    @Test func destroyKeyFileRemovesTheVaultAndTheKeyFile() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        #expect(try sandbox.run(["add", "a"], stdin: Data("v".utf8), environment: key).status == 0)
        // An earlier copy of the vault, as freed disk blocks or a backup would keep it.
        let copy = sandbox.path("old-copy.vault")
        try FileManager.default.copyItem(atPath: sandbox.vaultFile, toPath: copy)
        let keyPath = try #require(key["VAULT_KEY_FILE"])
        let wipe = try sandbox.run(["wipe", "--yes", "--destroy-key-file"], environment: key)
        #expect(wipe.status == 0, "\(wipe.stderrText)")
        #expect(wipe.stderrText.contains("Destroyed the key file"))
        #expect(!FileManager.default.fileExists(atPath: sandbox.vaultFile))
        #expect(!FileManager.default.fileExists(atPath: keyPath), "the key file is gone, so the old copy cannot be opened")
        #expect(FileManager.default.fileExists(atPath: copy))
    }

    @Test func destroyKeyFileWithoutAKeyFileWipesNothing() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let refused = try sandbox.run(["wipe", "--yes", "--destroy-key-file"], environment: ["VAULT_PASSPHRASE": "a long passphrase here"])
        #expect(refused.status == 64, "\(refused.stderrText)")
        #expect(refused.stderrText.contains("nothing was wiped"))
        #expect(FileManager.default.fileExists(atPath: sandbox.vaultFile))
        #expect(FileManager.default.fileExists(atPath: try #require(key["VAULT_KEY_FILE"])))
    }

    @Test func hardLinkedKeyFileIsRefusedAndTheOtherNameKeepsItsBytes() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let keyPath = try #require(key["VAULT_KEY_FILE"])
        let original = try Data(contentsOf: URL(fileURLWithPath: keyPath))
        let other = sandbox.path("other-name")
        #expect(link(keyPath, other) == 0)
        let refused = try sandbox.run(["wipe", "--yes", "--destroy-key-file", "--key-file", keyPath])
        #expect(refused.status == 77, "\(refused.stderrText)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: other)) == original)
    }

    @Test func plainWipeSaysWhatItCannotErase() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let help = try sandbox.run(["wipe", "--help"])
        let text = help.stdoutText.replacingOccurrences(of: "\n", with: " ").replacingOccurrences(of: "  ", with: " ")
        #expect(text.contains("cannot erase"))
        #expect(text.contains("--destroy-key-file"))
        let wipe = try sandbox.run(["wipe", "--yes"], environment: key)
        #expect(wipe.status == 0)
        #expect(wipe.stderrText.contains("Earlier copies"))
        #expect(FileManager.default.fileExists(atPath: try #require(key["VAULT_KEY_FILE"])), "the key file stays without the flag")
    }
}
