#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Testing
import TestScheduling

/// The agent's per-caller rules, with the real git: only git's credential helper, started by git,
/// reads `git:` entries; a "backup tool" may list but not get; a rules file others can change stops
/// the agent; a changed file is read again.
@Suite(.blockingWork, .serialized) struct AgentRulesTests {
    static let rules = """
        { "rules": [
            { "name": "git helper reads git entries", "action": "allow", "operations": ["get"], "entries": ["git:*"],
              "clients": ["git-credential-vault"], "parents": ["*/git"] },
            { "name": "nobody else reads git entries", "action": "deny", "operations": ["get"], "entries": ["git:*"] },
            { "name": "backups list only", "action": "deny", "operations": ["get", "add", "rm"], "parents": ["*/backup-tool"] }
        ] }
        """

    /// A git world whose vault is held by an agent started with `rules` in its XDG_CONFIG_HOME.
    final class World {
        let git: GitWorld
        let agent: RunningCLI
        let socket: String
        let config: String

        init?(rules: String = AgentRulesTests.rules) throws {
            guard let git = try GitWorld.make() else { return nil }
            self.git = git
            let folder = git.sandbox.path("agent")
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
            socket = folder + "/agent.sock"
            config = git.sandbox.path("config")
            try FileManager.default.createDirectory(atPath: config + "/vault", withIntermediateDirectories: true)
            _ = git.sandbox.privateFile("config/vault/agent.json", rules)
            agent = try git.sandbox.start(["agent"], environment: ["VAULT_AGENT_SOCK": socket, "XDG_CONFIG_HOME": config])
            let deadline = Date().addingTimeInterval(20)
            while !FileManager.default.fileExists(atPath: socket), Date() < deadline { usleep(10_000) }
            let unlocked = try git.sandbox.run(["unlock"], environment: git.key.merging(["VAULT_AGENT_SOCK": socket]) { _, new in new })
            guard unlocked.status == 0 else { throw CLITestFailure("unlock: \(unlocked.stderrText)") }
        }

        /// The environment of a caller with no key: only the agent can open the vault.
        var keyless: [String: String] { ["VAULT_AGENT_SOCK": socket, "VAULT_KEY_FILE": ""] }

        deinit {
            if agent.process.isRunning { kill(agent.pid, SIGKILL) }
            git.sandbox.cleanUp()
        }
    }

    @Test func onlyGitsHelperStartedByGitReadsGitEntries() throws {
        guard let world = try World() else { return }
        let credential = "protocol=https\nhost=example.test\nusername=alice\npassword=s3cret-pw\n\n"
        #expect(try world.git.git(["credential", "approve"], stdin: credential, environment: world.keyless).status == 0)
        let filled = try world.git.git(["credential", "fill"], stdin: "protocol=https\nhost=example.test\n\n", environment: world.keyless)
        #expect(filled.status == 0, "\(filled.stderrText)")
        #expect(filled.stdoutText.contains("password=s3cret-pw"), "git's helper, started by git, reads it through the agent")
        let name = try #require(try world.git.sandbox.run(["list", "--json"], environment: world.keyless).stdoutText
            .components(separatedBy: "\"").first { $0.hasPrefix("git:") })
        let direct = try world.git.sandbox.run(["get", name], environment: world.keyless)
        #expect(direct.status == 77)
        #expect(direct.stderrText.contains("nobody else reads git entries"))
        #expect(!direct.stdout.contains(Data(text: "s3cret-pw")))
        // The helper run by hand (not by git) is refused too: its parents are not git.
        let byHand = try world.git.helper("get", "protocol=https\nhost=example.test\n\n", environment: world.keyless)
        #expect(!byHand.stdout.contains(Data(text: "s3cret-pw")))
        kill(world.agent.pid, SIGTERM)
        let log = world.agent.finish(timeout: 20)
        #expect(log.stderrText.contains("refused get of '\(name)'"))
        #expect(!log.stderr.contains(Data(text: "s3cret-pw")))
    }

    @Test func aBackupToolMayListButNotGet() throws {
        guard let world = try World() else { return }
        let sandbox = world.git.sandbox
        #expect(try sandbox.run(["add", "api"], stdin: Data(text: "api-secret"), environment: world.keyless).status == 0)
        let tool = sandbox.path("backup-tool")
        try FileManager.default.copyItem(atPath: URL(fileURLWithPath: "/bin/sh").resolvingSymlinksInPath().path, toPath: tool)
        let vault = try CLIBinary.path()
        let environment = sandbox.environment.merging(world.keyless) { _, new in new }
        let listed = try ExternalProcess.run(tool, ["-c", "'\(vault)' list"], environment: environment, stdin: Data(), timeout: 30)
        #expect(listed.status == 0, "\(listed.stderrText)")
        #expect(listed.stdoutText.contains("api"))
        let got = try ExternalProcess.run(tool, ["-c", "'\(vault)' get api"], environment: environment, stdin: Data(), timeout: 30)
        #expect(got.status == 77)
        #expect(got.stderrText.contains("backups list only"))
        #expect(try sandbox.run(["get", "api"], environment: world.keyless).stdoutText == "api-secret", "others still get it")
    }

    @Test func aChangedRulesFileIsReadAgain() throws {
        guard let world = try World(rules: #"{ "rules": [] }"#) else { return }
        let sandbox = world.git.sandbox
        #expect(try sandbox.run(["add", "api"], stdin: Data(text: "api-secret"), environment: world.keyless).status == 0)
        #expect(try sandbox.run(["get", "api"], environment: world.keyless).status == 0)
        _ = sandbox.privateFile("config/vault/agent.json", #"{ "rules": [ { "name": "deny all", "action": "deny" } ] }"#)
        let denied = try sandbox.run(["get", "api"], environment: world.keyless)
        #expect(denied.status == 77)
        #expect(denied.stderrText.contains("deny all"))
        _ = sandbox.privateFile("config/vault/agent.json", #"{ "rules": [ { "action": "sometimes" } ] }"#)
        #expect(try sandbox.run(["get", "api"], environment: world.keyless).status == 64, "an unusable file refuses every entry request")
    }

    @Test func anUnsafeOrMalformedRulesFileStopsTheStart() throws {
        let sandbox = try CLISandbox()
        defer { sandbox.cleanUp() }
        let folder = sandbox.path("agent")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        try FileManager.default.createDirectory(atPath: sandbox.path("config/vault"), withIntermediateDirectories: true)
        let rules = sandbox.privateFile("config/vault/agent.json", #"{ "rules": [] }"#)
        chmod(rules, 0o666)
        let environment = ["VAULT_AGENT_SOCK": folder + "/agent.sock", "XDG_CONFIG_HOME": sandbox.path("config")]
        let unsafe = try sandbox.run(["agent"], environment: environment)
        #expect(unsafe.status == 77, "\(unsafe.stderrText)")
        _ = sandbox.privateFile("config/vault/agent.json", #"{ "rules": [ { "action": "allow", "entriez": ["x"] } ] }"#)
        chmod(rules, 0o600)
        let malformed = try sandbox.run(["agent"], environment: environment)
        #expect(malformed.status == 64)
        #expect(malformed.stderrText.contains("entriez"))
    }
}
