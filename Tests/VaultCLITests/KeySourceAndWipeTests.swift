import CredentialVault
import Foundation
import Testing
import TestScheduling
@testable import VaultCLI

/// The key order as one value (`KeySource`), and its readers: the context's key and agent choice,
/// `vault wipe --destroy-key-file`, `vault unlock`'s pinentry, entry-name completion.
@Suite struct KeySourceTests {
    static let passphrase = SecureBytes(copying: Array("a long passphrase here".utf8))
    static let withKeyFile = CommandEnvironment([.vaultKeyFile: "/env.key"])

    @Test func firstMatchWinsInTheDocumentedOrder() throws {
        let all = KeySource(keyFile: "/option.key", passphraseFile: nil, environment: Self.withKeyFile, passphrase: Self.passphrase)
        guard case .keyFile(path: "/option.key") = all else { Issue.record("\(all)"); return }
        let passphraseFile = KeySource(keyFile: nil, passphraseFile: "/p", environment: Self.withKeyFile, passphrase: Self.passphrase)
        guard case .passphraseFile(path: "/p") = passphraseFile else { Issue.record("\(passphraseFile)"); return }
        let environmentFile = KeySource(keyFile: nil, passphraseFile: nil, environment: Self.withKeyFile, passphrase: Self.passphrase)
        guard case .environmentKeyFile(path: "/env.key") = environmentFile else { Issue.record("\(environmentFile)"); return }
        let environmentPassphrase = KeySource(keyFile: nil, passphraseFile: nil, environment: CommandEnvironment(),
                                              passphrase: Self.passphrase)
        guard case .environmentPassphrase = environmentPassphrase else { Issue.record("\(environmentPassphrase)"); return }
        let none = KeySource(keyFile: nil, passphraseFile: nil, environment: CommandEnvironment(), passphrase: nil)
        guard case .asked = none else { Issue.record("\(none)"); return }
        // An empty VAULT_KEY_FILE is unset, as before.
        let empty = KeySource(keyFile: nil, passphraseFile: nil, environment: CommandEnvironment([.vaultKeyFile: ""]), passphrase: nil)
        guard case .asked = empty else { Issue.record("\(empty)"); return }
    }

    @Test func theKeyFileToDestroyAndTheAgentsPlaceFollowTheOrder() throws {
        #expect(KeySource(keyFile: "/o.key", passphraseFile: nil, environment: Self.withKeyFile, passphrase: nil).keyFilePath == "/o.key")
        #expect(KeySource(keyFile: nil, passphraseFile: nil, environment: Self.withKeyFile, passphrase: nil).keyFilePath == "/env.key")
        // --passphrase-file comes before VAULT_KEY_FILE: that file is not the vault's key.
        #expect(KeySource(keyFile: nil, passphraseFile: "/p", environment: Self.withKeyFile, passphrase: nil).keyFilePath == nil)
        #expect(KeySource(keyFile: nil, passphraseFile: nil, environment: CommandEnvironment(), passphrase: Self.passphrase).keyFilePath == nil)
        // The agent comes after the two options, before the environment and the prompt.
        #expect(!KeySource(keyFile: "/o.key", passphraseFile: nil, environment: Self.withKeyFile, passphrase: nil).yieldsToAgent)
        #expect(!KeySource(keyFile: nil, passphraseFile: "/p", environment: Self.withKeyFile, passphrase: nil).yieldsToAgent)
        #expect(KeySource(keyFile: nil, passphraseFile: nil, environment: Self.withKeyFile, passphrase: nil).yieldsToAgent)
        #expect(KeySource(keyFile: nil, passphraseFile: nil, environment: CommandEnvironment(), passphrase: Self.passphrase).yieldsToAgent)
        #expect(KeySource(keyFile: nil, passphraseFile: nil, environment: CommandEnvironment(), passphrase: nil).yieldsToAgent)
    }

    @Test func onlyAnAskedKeyNeedsAQuestion() throws {
        #expect(try KeySource.asked.keyWithoutAsking() == nil)
        guard case .passphrase(let taken)? = try KeySource.environmentPassphrase(Self.passphrase).keyWithoutAsking() else {
            Issue.record("the passphrase is the key"); return
        }
        #expect(taken == Self.passphrase)
        // A key file that cannot be read is its own error, never a fall-through to the next source.
        #expect(throws: VaultError.self) { try KeySource.environmentKeyFile(path: "/nonexistent-\(UUID().uuidString)").keyWithoutAsking() }
    }

    @Test func theContextDecidesFromItsOwnEnvironmentAndPassphrases() throws {
        let context = CommandContext(oauth: nil, postgres: nil, passphrases: CapturedPassphrases(values: ["VAULT_PASSPHRASE": Self.passphrase]),
                                     environment: Self.withKeyFile)
        let options = try VaultOptions.parse([])
        guard case .environmentKeyFile(path: "/env.key") = context.keySource(options) else { Issue.record("\(context.keySource(options))"); return }
        let bare = CommandContext(oauth: nil, postgres: nil, passphrases: CapturedPassphrases(values: ["VAULT_PASSPHRASE": Self.passphrase]),
                                  environment: CommandEnvironment())
        guard case .environmentPassphrase = bare.keySource(options) else { Issue.record("\(bare.keySource(options))"); return }
    }
}

/// `vault wipe --destroy-key-file` destroys the key source's key file, nothing else.
@Suite(.blockingWork) struct WipeKeySourceTests {
    @Test func aPassphraseFileBeforeVaultKeyFileLeavesThatFileAndWipesNothing() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let keyPath = try #require(key["VAULT_KEY_FILE"])
        let passphraseFile = sandbox.privateFile("passphrase", "a long passphrase here\n")
        // The key order says the passphrase file opens the vault: VAULT_KEY_FILE is not its key.
        let refused = try sandbox.run(["wipe", "--yes", "--destroy-key-file", "--passphrase-file", passphraseFile], environment: key)
        #expect(refused.status == 64, "\(refused.stderrText)")
        #expect(refused.stderrText.contains("nothing was wiped"))
        #expect(FileManager.default.fileExists(atPath: sandbox.vaultFile))
        #expect(FileManager.default.fileExists(atPath: keyPath))
    }

    @Test func theKeyFileOptionComesBeforeVaultKeyFile() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let environmentKey = try #require(key["VAULT_KEY_FILE"])
        let optionKey = try sandbox.keyFile("bob.key")
        let wipe = try sandbox.run(["wipe", "--yes", "--destroy-key-file", "--key-file", optionKey], environment: key)
        #expect(wipe.status == 0, "\(wipe.stderrText)")
        #expect(!FileManager.default.fileExists(atPath: optionKey))
        #expect(FileManager.default.fileExists(atPath: environmentKey))
    }
}
