import Foundation
import Testing
import TestScheduling

/// Every `vault` run is a fresh process: the generation it must not go below comes from the
/// rollback memory under $HOME/.local/state/vault/generations (the sandbox's HOME).
@Suite(.blockingWork) struct RollbackCommandTests {
    static func copy(_ path: String) throws -> Data { try Data(contentsOf: URL(fileURLWithPath: path)) }

    static func putBack(_ data: Data, at path: String) throws {
        try data.write(to: URL(fileURLWithPath: path))
        chmod(path, 0o600)
    }

    static func directoryListing(_ path: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: path).sorted()
    }

    @Test func aFreshProcessRefusesARolledBackVaultUnlessTheRestoreIsAccepted() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        #expect(try sandbox.run(["add", "old"], stdin: Data(text: "value-1"), environment: key).status == 0)
        let oldCopy = try Self.copy(sandbox.vaultFile)
        #expect(try sandbox.run(["add", "new"], stdin: Data(text: "value-2"), environment: key).status == 0)

        // The memory lives outside the vault folder, private.
        let memory = sandbox.path(".local/state/vault/generations")
        let records = try Self.directoryListing(memory)
        #expect(records.count == 1 && records[0].hasSuffix(".generation"))
        let directoryMode = try FileManager.default.attributesOfItem(atPath: memory)[.posixPermissions] as? Int
        let fileMode = try FileManager.default.attributesOfItem(atPath: memory + "/" + records[0])[.posixPermissions] as? Int
        #expect(directoryMode == 0o700 && fileMode == 0o600)

        try Self.putBack(oldCopy, at: sandbox.vaultFile)
        let before = try Self.directoryListing(sandbox.vaultDirectory)
        for command in [["list"], ["get", "old"], ["verify"]] {
            let refused = try sandbox.run(command, environment: key)
            #expect(refused.status == 65, "\(command): \(refused.stderrText)")
            #expect(refused.stderrText.contains("older than generation"), "\(command)")
            #expect(refused.stderrText.contains("--accept-rollback"), "\(command)")
            #expect(!refused.stdoutText.contains("value-1"))
        }
        #expect(try sandbox.run(["add", "x"], stdin: Data(text: "v"), environment: key).status == 65, "a write is refused too")
        #expect(try Self.copy(sandbox.vaultFile) == oldCopy, "the refused file is left as it was")
        #expect(try Self.directoryListing(sandbox.vaultDirectory) == before, "refused reads write nothing in the vault folder")

        // Restoring on purpose: accepted once, and the memory follows the restored file.
        let accepted = try sandbox.run(["list", "--accept-rollback"], environment: key)
        #expect(accepted.status == 0, "\(accepted.stderrText)")
        #expect(accepted.stdoutText.contains("old") && !accepted.stdoutText.contains("new"))
        #expect(try sandbox.run(["list"], environment: key).status == 0)
    }

    @Test func aRolledBackVaultAndProfileFromBeforeSignoutDoNotReviveTheToken() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let response = try Data(contentsOf: CLIFixtures.root.appendingPathComponent("token-responses/full.json"))
        let signin = try sandbox.run(["signin", "--user-id", "user-1234", "--name", "Alice"], stdin: response, environment: key)
        #expect(signin.status == 0, "\(signin.stderrText)")
        let token = try sandbox.run(["token"], environment: key)
        #expect(token.status == 0)
        let accessToken = token.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(!accessToken.isEmpty)
        let profilePath = sandbox.vaultDirectory + "/profile.json"
        let oldVault = try Self.copy(sandbox.vaultFile)
        let oldProfile = try Self.copy(profilePath)

        #expect(try sandbox.run(["signout"], environment: key).status == 0)
        #expect(try sandbox.run(["token"], environment: key).status != 0, "signed out: no token")

        try Self.putBack(oldVault, at: sandbox.vaultFile)
        try Self.putBack(oldProfile, at: profilePath)
        let revived = try sandbox.run(["token"], environment: key)
        #expect(revived.status == 65, "\(revived.stderrText)")
        #expect(!revived.stdoutText.contains(accessToken) && !revived.stderrText.contains(accessToken))
        #expect(revived.stderrText.contains("older than generation"))
        let status = try sandbox.run(["status", "--json"], environment: key)
        #expect(!status.stdoutText.contains(accessToken))
        #expect(!status.stdoutText.contains("\"signedIn\"") && !status.stdoutText.contains("\"needsOnboarding\""), "\(status.stdoutText)")
    }
}
