#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CredentialVault
import Foundation
import Testing
import TestScheduling

/// A read command never writes: `status`, `list`, `get`, `inspect`, `verify` and `token`
/// leave the file tree exactly as they found it, on a missing vault and on an existing one.
@Suite(.blockingWork) struct ReadOnlyCommandTests {
    /// Every read command with the exit status it has when there is no vault.
    static let readCommands: [(arguments: [String], missingStatus: Int32)] = [
        (["status"], 0), (["status", "--json"], 0),
        (["list"], 66), (["list", "--json"], 66),
        (["get", "s"], 66), (["inspect", "s"], 66), (["inspect", "s", "--json"], 66),
        (["verify"], 66), (["verify", "--json"], 66),
        (["token"], 66),
    ]

    /// One line per path under `root`: type, mode, size, modification time (ns) and, for
    /// regular files, the contents' SHA-256. Any created, removed or rewritten file shows.
    static func tree(_ root: String) throws -> [String] {
        var lines: [String] = []
        func visit(_ path: String) throws {
            var info = stat()
            guard lstat(path, &info) == 0 else { throw CLITestFailure("lstat \(path): errno \(errno)") }
            let type = info.st_mode & S_IFMT
            var line = "\(path) type=\(type) mode=\(String(info.st_mode & 0o7777, radix: 8)) size=\(info.st_size) "
                + "mtime=\(info.st_mtim.tv_sec).\(info.st_mtim.tv_nsec) ino=\(info.st_ino)"
            if type == S_IFREG {
                let data = try Data(contentsOf: URL(fileURLWithPath: path))
                line += " bytes=\(data.base64EncodedString().hashValue)"
            }
            lines.append(line)
            if type == S_IFDIR {
                for name in try FileManager.default.contentsOfDirectory(atPath: path).sorted() {
                    try visit((path as NSString).appendingPathComponent(name))
                }
            }
        }
        try visit(root)
        return lines
    }

    /// Runs every read command and checks the tree under the sandbox is unchanged after each.
    static func expectNoWrites(_ sandbox: CLISandbox, environment: [String: String],
                               statuses: (([String], Int32) -> Void)? = nil) throws {
        for (arguments, _) in readCommands {
            let before = try tree(sandbox.root)
            let result = try sandbox.run(arguments, environment: environment)
            let after = try tree(sandbox.root)
            #expect(before == after, "vault \(arguments.joined(separator: " ")) changed the files: \(Set(after).symmetricDifference(before).sorted())")
            statuses?(arguments, result.status)
        }
    }

    @Test(arguments: [false, true])
    func onAMissingVaultEveryReadCommandSaysSoAndCreatesNothing(withKey: Bool) throws {
        let sandbox = try CLISandbox()
        defer { sandbox.cleanUp() }
        let key = withKey ? ["VAULT_KEY_FILE": try sandbox.keyFile()] : [:]
        try Self.expectNoWrites(sandbox, environment: key)
        #expect(!FileManager.default.fileExists(atPath: sandbox.vaultDirectory), "the vault folder was created")
        for (arguments, status) in Self.readCommands {
            let result = try sandbox.run(arguments, environment: key)
            #expect(result.status == status, "vault \(arguments): \(result.stderrText)")
            let said = result.stdoutText + result.stderrText
            #expect(said.contains(sandbox.vaultDirectory), "vault \(arguments) names the missing vault: \(said)")
        }
        #expect(!FileManager.default.fileExists(atPath: sandbox.vaultDirectory))
    }

    @Test func theDefaultLocationUnderHomeIsNotCreatedEither() throws {
        let sandbox = try CLISandbox()
        defer { sandbox.cleanUp() }
        // No VAULT_DIR: the default is $HOME/.local/share/vault, and HOME is the sandbox.
        let environment = ["VAULT_DIR": "", "VAULT_KEY_FILE": try sandbox.keyFile()]
        try Self.expectNoWrites(sandbox, environment: environment)
        #expect(!FileManager.default.fileExists(atPath: sandbox.path(".local")), "~/.local was created")
        let status = try sandbox.run(["status", "--json"], environment: environment)
        let object = try #require(try JSONSerialization.jsonObject(with: status.stdout) as? [String: Any])
        #expect(object["state"] as? String == "guest")
        #expect(object["anonymousId"] is NSNull)
        #expect((object["message"] as? String)?.contains(sandbox.path(".local/share/vault")) == true)
    }

    @Test func onAnExistingVaultEveryReadCommandLeavesItAsItWas() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        #expect(try sandbox.run(["add", "s"], stdin: Data("secret".utf8), environment: key).status == 0)
        // A vault without a profile (`vault init` makes one with the anonymous id; a vault from an
        // app that never restored has none): status must not make one (nor an anonymous id).
        try FileManager.default.removeItem(atPath: sandbox.path("vault/profile.json"))
        try Self.expectNoWrites(sandbox, environment: key) { arguments, status in
            if arguments.first != "token" { #expect(status == 0, "vault \(arguments)") }
        }
        #expect(!FileManager.default.fileExists(atPath: sandbox.path("vault/profile.json")))
        // Signed in, with the profile and every lock file in place.
        let response = try Data(contentsOf: CLIFixtures.root.appendingPathComponent("token-responses/full.json"))
        #expect(try sandbox.run(["signin", "--user-id", "u1", "--onboarded"], stdin: response, environment: key).status == 0)
        try Self.expectNoWrites(sandbox, environment: key) { arguments, status in
            #expect(status == 0, "vault \(arguments)")
        }
        // Without a key: locked, still nothing written.
        try Self.expectNoWrites(sandbox, environment: [:])
    }

    @Test func statusOnAMissingVaultSaysSoInWords() throws {
        let sandbox = try CLISandbox()
        defer { sandbox.cleanUp() }
        let status = try sandbox.run(["status"])
        #expect(status.status == 0)
        #expect(status.stdoutText.contains("no vault or profile in \(sandbox.vaultDirectory) (nothing was created)"))
        let token = try sandbox.run(["token"])
        #expect(token.status == 66)
        #expect(token.stderrText.contains("no vault here"))
    }
}
