import Foundation
import Testing
import TestScheduling
@testable import VaultCLI

/// A sandbox with a vault, `git-credential-vault` linked to the built `vault`, and an
/// environment in which git sees only the sandbox's configuration and never prompts.
struct GitWorld {
    let sandbox: CLISandbox
    let key: [String: String]
    let git: String
    let helper: String

    /// Nil when git is not installed (a recorded failure under CI=true).
    static func make(sourceLocation: SourceLocation = #_sourceLocation) throws -> GitWorld? {
        guard let git = ExternalProcess.required("git", sourceLocation: sourceLocation) else { return nil }
        let (sandbox, key) = try CLISandbox.withVault()
        let bin = sandbox.path("bin")
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        let helper = bin + "/git-credential-vault"
        try FileManager.default.createSymbolicLink(atPath: helper, withDestinationPath: try CLIBinary.path())
        return GitWorld(sandbox: sandbox, key: key, git: git, helper: helper)
    }

    /// git's environment: HOME in the sandbox, no system or user configuration, no prompts.
    var environment: [String: String] {
        var environment = sandbox.environment.merging(key) { _, new in new }
        for name in ["GIT_ASKPASS", "SSH_ASKPASS", "GIT_DIR", "GIT_WORK_TREE"] { environment[name] = nil }
        environment["GIT_CONFIG_NOSYSTEM"] = "1"
        environment["GIT_CONFIG_GLOBAL"] = sandbox.path("gitconfig")
        environment["GIT_TERMINAL_PROMPT"] = "0"
        environment["GIT_AUTHOR_NAME"] = "Test"
        environment["GIT_AUTHOR_EMAIL"] = "test@example.com"
        environment["GIT_COMMITTER_NAME"] = "Test"
        environment["GIT_COMMITTER_EMAIL"] = "test@example.com"
        return environment
    }

    /// Runs git with the helper configured by absolute path.
    @discardableResult
    func git(_ arguments: [String], stdin: String = "", directory: String? = nil, environment extra: [String: String] = [:],
             sourceLocation: SourceLocation = #_sourceLocation) throws -> CLIResult {
        try ExternalProcess.run(git, ["-c", "credential.helper=", "-c", "credential.helper=\(helper)"] + arguments,
                                environment: environment.merging(extra) { _, new in new }, stdin: Data(stdin.utf8),
                                directory: directory, timeout: 60, sourceLocation: sourceLocation)
    }

    /// Runs the helper directly, as git would, with `stdin` as the request.
    @discardableResult
    func helper(_ operation: String, _ stdin: String, environment extra: [String: String] = [:]) throws -> CLIResult {
        try ExternalProcess.run(helper, [operation], environment: environment.merging(extra) { _, new in new },
                                stdin: Data(stdin.utf8), timeout: 30)
    }

    /// `vault list --json` names.
    func entryNames() throws -> [String] {
        let list = try sandbox.run(["list", "--json"], environment: key)
        let array = try JSONSerialization.jsonObject(with: list.stdout) as? [[String: Any]] ?? []
        return array.compactMap { $0["name"] as? String }
    }
}

/// The git credential helper: protocol units, `git credential fill/approve/reject` with the
/// real git, and a real clone and push over HTTP with basic authentication.
@Suite(.blockingWork) struct GitCredentialHelperTests {
    // MARK: Units

    @Test func entryNamesRoundTripAndEncodeAwkwardCharacters() throws {
        var credential = GitCredential(protocolName: "https", host: "example.com:8443", path: "team/repo.git", username: "a@b/c")
        #expect(credential.entryName == "git:https://a%40b%2Fc@example.com:8443/team/repo.git")
        let parsed = try #require(GitCredential(entryName: credential.entryName))
        #expect(parsed.protocolName == "https" && parsed.host == "example.com:8443")
        #expect(parsed.path == "team/repo.git" && parsed.username == "a@b/c")
        credential.username = "new\nline"
        #expect(!credential.entryName.contains("\n"))
        #expect(GitCredential(entryName: credential.entryName)?.username == "new\nline")
        #expect(GitCredential(entryName: "github-token") == nil)
        #expect(GitCredential(entryName: "git:https://bad%zz@host") == nil)
    }

    @Test func matchingFollowsGitsRule() {
        let stored = GitCredential(protocolName: "https", host: "example.com", path: "repo.git", username: "alice")
        #expect(GitCredential(protocolName: "https", host: "example.com").matches(stored))
        #expect(GitCredential(protocolName: "https", host: "example.com", username: "alice").matches(stored))
        #expect(!GitCredential(protocolName: "https", host: "example.com", username: "bob").matches(stored))
        #expect(!GitCredential(protocolName: "http", host: "example.com").matches(stored))
        #expect(!GitCredential(protocolName: "https", host: "example.com", path: "other.git").matches(stored))
        #expect(!GitCredential(protocolName: "https", host: "example.com")
            .matches(GitCredential(protocolName: "https", host: "example.org", username: "alice")))
    }

    @Test func parsingKeepsSecretsOutOfTextAndIgnoresUnknownAttributes() {
        let input = "protocol=https\nhost=example.com\ncapability[]=authtype\nwwwauth[]=Basic realm=\"x\"\n"
            + "password=p=w\r\nnonsense\n\nusername=after-blank-line\n"
        let fields = CredentialFields.parse(.init(copying: Array(input.utf8)), secretKeys: GitCredential.secretKeys)
        let credential = GitCredential(fields)
        #expect(credential.protocolName == "https" && credential.host == "example.com")
        #expect(credential.username == nil, "reading stops at the blank line")
        #expect(credential.password == .init(copying: Array("p=w".utf8)))
        #expect(fields.text["password"] == nil)
    }

    // MARK: Through the real git

    @Test func gitCredentialApproveFillRejectRoundTrip() throws {
        guard let world = try GitWorld.make() else { return }
        defer { world.sandbox.cleanUp() }
        let approve = try world.git(["credential", "approve"],
                                    stdin: "protocol=https\nhost=git.example.com\nusername=alice\npassword=correct horse\n\n")
        #expect(approve.status == 0, "\(approve.stderrText)")
        #expect(try world.entryNames() == ["git:https://alice@git.example.com"])
        let list = try world.sandbox.run(["list"], environment: world.key)
        #expect(list.stdoutText.contains("git:https://alice@git.example.com  password"))
        #expect(!list.stdout.contains(Data(text: "correct horse")))

        let fill = try world.git(["credential", "fill"], stdin: "protocol=https\nhost=git.example.com\n\n")
        #expect(fill.status == 0, "\(fill.stderrText)")
        #expect(fill.stdoutText.contains("username=alice\n"))
        #expect(fill.stdoutText.contains("password=correct horse\n"))

        // A second user on the same host: fill by user name picks the right one.
        try world.git(["credential", "approve"], stdin: "protocol=https\nhost=git.example.com\nusername=bob\npassword=bobs\n\n")
        let bob = try world.git(["credential", "fill"], stdin: "protocol=https\nhost=git.example.com\nusername=bob\n\n")
        #expect(bob.stdoutText.contains("password=bobs\n"))

        // reject removes only what matches: bob goes, alice stays.
        let reject = try world.git(["credential", "reject"], stdin: "protocol=https\nhost=git.example.com\nusername=bob\n\n")
        #expect(reject.status == 0)
        #expect(try world.entryNames() == ["git:https://alice@git.example.com"])

        // Nothing for another host: git's own failure, no prompt, no hang.
        let other = try world.git(["credential", "fill"], stdin: "protocol=https\nhost=other.example.com\n\n")
        #expect(other.status == 128)
        #expect(other.stderrText.contains("terminal prompts disabled"))
    }

    @Test func expiryAndRefreshTokenAreKeptAndExpiredIsNotReturned() throws {
        guard let world = try GitWorld.make() else { return }
        defer { world.sandbox.cleanUp() }
        let future = Int(Date().timeIntervalSince1970) + 3600
        let store = try world.helper("store", "protocol=https\nhost=h.example\nusername=u\npassword=pw\n"
            + "password_expiry_utc=\(future)\noauth_refresh_token=rt-123\nunknown_attribute=x\n\n")
        #expect(store.status == 0, "\(store.stderrText)")
        let get = try world.helper("get", "protocol=https\nhost=h.example\n\n")
        #expect(get.stdoutText == "username=u\npassword=pw\npassword_expiry_utc=\(future)\noauth_refresh_token=rt-123\n")
        let list = try world.sandbox.run(["list", "--json"], environment: world.key)
        #expect(list.stdoutText.contains("\"expiresAt\""))

        // An entry whose expiry has passed is not returned.
        // Far enough ahead that a loaded machine still stores it before it lapses.
        let soon = Int(Date().timeIntervalSince1970) + 5
        try world.helper("store", "protocol=https\nhost=soon.example\nusername=u\npassword=pw\npassword_expiry_utc=\(soon)\n\n")
        #expect(try world.entryNames().contains("git:https://u@soon.example"))
        Thread.sleep(until: Date(timeIntervalSince1970: TimeInterval(soon) + 0.2))
        let expired = try world.helper("get", "protocol=https\nhost=soon.example\n\n")
        #expect(expired.status == 0)
        #expect(expired.stdout.isEmpty)
        // One already expired when offered is not stored.
        try world.helper("store", "protocol=https\nhost=past.example\nusername=u\npassword=pw\npassword_expiry_utc=1000\n\n")
        #expect(!(try world.entryNames().contains("git:https://u@past.example")))
    }

    @Test func eraseWithAPasswordRemovesOnlyTheMatchingOne() throws {
        guard let world = try GitWorld.make() else { return }
        defer { world.sandbox.cleanUp() }
        try world.helper("store", "protocol=https\nhost=h.example\nusername=u\npassword=current\n\n")
        try world.helper("erase", "protocol=https\nhost=h.example\nusername=u\npassword=stale\n\n")
        #expect(try world.entryNames() == ["git:https://u@h.example"])
        try world.helper("erase", "protocol=https\nhost=h.example\nusername=u\npassword=current\n\n")
        #expect(try world.entryNames().isEmpty)
        // An empty request erases nothing.
        try world.helper("store", "protocol=https\nhost=h.example\nusername=u\npassword=current\n\n")
        try world.helper("erase", "\n")
        #expect(try world.entryNames().count == 1)
    }

    @Test func withoutAKeyTheHelperFailsAtOnceAndNeverPrompts() throws {
        guard let world = try GitWorld.make() else { return }
        defer { world.sandbox.cleanUp() }
        var environment = world.environment
        environment["VAULT_KEY_FILE"] = nil
        let result = try ExternalProcess.run(world.helper, ["get"], environment: environment,
                                             stdin: Data("protocol=https\nhost=h.example\n\n".utf8), timeout: 20)
        #expect(result.status == 64)
        #expect(result.stderrText.contains("no key for the vault"))
        #expect(result.stdout.isEmpty)
        // Unknown operations are ignored, as gitcredentials(7) asks.
        #expect(try world.helper("frobnicate", "protocol=https\n\n").status == 0)
    }

    @Test func cloneAndPushOverHTTPWithThePasswordFromVault() throws {
        guard let world = try GitWorld.make() else { return }
        defer { world.sandbox.cleanUp() }
        let root = world.sandbox.path("served")
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        #expect(try world.git(["init", "-q", "--bare", "-b", "main", root + "/repo.git"]).status == 0)
        try world.git(["-C", root + "/repo.git", "config", "http.receivepack", "true"])
        let seed = world.sandbox.path("seed")
        try world.git(["init", "-q", "-b", "main", seed])
        try world.git(["-C", seed, "commit", "-q", "--allow-empty", "-m", "first"])
        #expect(try world.git(["-C", seed, "push", "-q", root + "/repo.git", "main"]).status == 0)

        let server = try GitHTTPServer(root: root, user: "alice", password: "s3cret-pw", environment: world.environment)
        defer { server.stop() }
        let url = "http://127.0.0.1:\(server.port)/repo.git"
        try world.helper("store", "protocol=http\nhost=127.0.0.1:\(server.port)\nusername=alice\npassword=s3cret-pw\n\n")

        let clone = try world.git(["clone", "-q", url, world.sandbox.path("work")])
        #expect(clone.status == 0, "\(clone.stderrText)")
        let work = world.sandbox.path("work")
        try world.git(["-C", work, "commit", "-q", "--allow-empty", "-m", "second"])
        let push = try world.git(["-C", work, "push", "-q", "origin", "main"])
        #expect(push.status == 0, "\(push.stderrText)")
        let log = try world.git(["--git-dir", root + "/repo.git", "log", "--format=%s", "main"])
        #expect(log.stdoutText == "second\nfirst\n")

        // A wrong stored password: git's normal failure, quickly, and git rejects (erases) it.
        try world.helper("store", "protocol=http\nhost=127.0.0.1:\(server.port)\nusername=alice\npassword=wrong\n\n")
        let started = Date()
        let failed = try world.git(["clone", "-q", url, world.sandbox.path("second")])
        #expect(failed.status == 128)
        #expect(failed.stderrText.contains("Authentication failed"))
        #expect(Date().timeIntervalSince(started) < 30)
        #expect(try world.entryNames().isEmpty)
    }
}
