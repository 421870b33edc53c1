import Foundation
import Testing
import TestScheduling

/// `vault upgrade-format` (issue 25, point 8): the explicit step from format 2 to 3.
@Suite(.blockingWork) struct UpgradeFormatCommandTests {
    /// The source tree's CredentialVaultTests fixtures (the golden vaults and their key).
    static let goldenFixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("CredentialVaultTests/Fixtures")

    /// A sandbox whose vault is a copy of the golden format 2 file, and the environment that opens it.
    static func sandboxWithVersion2Vault() throws -> (CLISandbox, [String: String]) {
        let sandbox = try CLISandbox()
        try FileManager.default.createDirectory(atPath: sandbox.vaultDirectory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        let vault = try Data(contentsOf: goldenFixtures.appendingPathComponent("golden/v2-keyfile.vault"))
        #expect(FileManager.default.createFile(atPath: sandbox.vaultFile, contents: vault, attributes: [.posixPermissions: 0o600]))
        let key = sandbox.path("golden.key")
        let material = try Data(contentsOf: goldenFixtures.appendingPathComponent("keys/alice.key"))
        #expect(FileManager.default.createFile(atPath: key, contents: material, attributes: [.posixPermissions: 0o600]))
        return (sandbox, ["VAULT_KEY_FILE": key])
    }

    static func majorVersion(_ sandbox: CLISandbox) throws -> UInt8 {
        try Data(contentsOf: URL(fileURLWithPath: sandbox.vaultFile))[8]
    }

    @Test func aVersion2VaultStaysVersion2OnWritesAndMovesToVersion3OnlyWhenAsked() throws {
        let (sandbox, key) = try Self.sandboxWithVersion2Vault()
        defer { sandbox.cleanUp() }
        #expect(try sandbox.run(["add", "added"], stdin: Data("new".utf8), environment: key).status == 0)
        #expect(try Self.majorVersion(sandbox) == 2, "a write keeps format 2")
        let verify = try sandbox.run(["verify", "--json"], environment: key)
        let report = try #require(try JSONSerialization.jsonObject(with: verify.stdout) as? [String: Any])
        #expect(report["format"] as? Int == 2)
        #expect(try sandbox.run(["verify"], environment: key).stdoutText.contains("'vault upgrade-format' moves it to format 3"))

        let upgrade = try sandbox.run(["upgrade-format", "--json"], environment: key)
        #expect(upgrade.status == 0, "\(upgrade.stderrText)")
        let object = try #require(try JSONSerialization.jsonObject(with: upgrade.stdout) as? [String: Any])
        #expect(object["previousVersion"] as? Int == 2 && object["version"] as? Int == 3 && object["changed"] as? Bool == true)
        #expect(try Self.majorVersion(sandbox) == 3)
        #expect(try sandbox.run(["get", "github"], environment: key).stdout == Data("gho_16C7e42F292c6912E7710c838347Ae178B4a".utf8))
        #expect(try sandbox.run(["get", "added"], environment: key).stdout == Data("new".utf8))
        let verified = try sandbox.run(["verify"], environment: key)
        #expect(verified.status == 0)
        #expect(!verified.stdoutText.contains("upgrade-format"), "nothing to suggest at format 3")

        let before = try Data(contentsOf: URL(fileURLWithPath: sandbox.vaultFile))
        let again = try sandbox.run(["upgrade-format"], environment: key)
        #expect(again.status == 0)
        #expect(again.stderrText.contains("already format 3"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: sandbox.vaultFile)) == before, "nothing written when current")
    }

    @Test func aNewVaultIsVersion3AndTheWrongKeyChangesNothing() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        #expect(try Self.majorVersion(sandbox) == 3)
        let (old, oldKey) = try Self.sandboxWithVersion2Vault()
        defer { old.cleanUp() }
        let before = try Data(contentsOf: URL(fileURLWithPath: old.vaultFile))
        // The sandbox's own key is not the golden vault's.
        let wrong = try old.run(["upgrade-format"], environment: ["VAULT_KEY_FILE": key["VAULT_KEY_FILE"] ?? ""])
        #expect(wrong.status == 77, "\(wrong.stderrText)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: old.vaultFile)) == before)
        #expect(try old.run(["upgrade-format"], environment: oldKey).status == 0)
    }
}
