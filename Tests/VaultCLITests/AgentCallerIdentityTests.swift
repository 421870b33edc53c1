#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Testing
import TestScheduling

/// The agent's rules for a real user: the agent, the vault, git and every caller run as an ordinary
/// user (uid 65534, through setpriv), without the capabilities root has — which is what hid that an
/// agent cannot read a non-dumpable caller's executable. The documented git rule lets git's helper
/// through; a bind mount in another mount namespace does not make a shell into git; a caller is
/// identified when it connects; the rules file is checked as OpenSSH's StrictModes and a file that
/// disappears refuses instead of lifting its rules.
@Suite(.blockingWork, .serialized) struct AgentCallerIdentityTests {
    static let documentedRules = """
        { "rules": [
            { "name": "git helper reads git entries", "action": "allow", "operations": ["get"],
              "entries": ["git:*"], "clients": ["git-credential-vault"], "parents": ["/usr/bin/git"] },
            { "name": "nobody else reads git entries", "action": "deny", "operations": ["get"], "entries": ["git:*"] }
        ] }
        """
    static let backupRules = #"{ "rules": [ { "name": "backup tools get nothing", "action": "deny", "operations": ["get"], "parents": ["*/backup-tool"] } ] }"#
    static let password = "s3cret-\(UUID().uuidString)"
    static let request = "protocol=https\nhost=example.test\n\n"

    static var canSwitchUser: Bool {
        geteuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")
            && FileManager.default.isExecutableFile(atPath: "/usr/bin/python3")
    }

    /// A sandbox owned by `uid`, with a vault (fixture key), a rules file, git's helper and, once
    /// started, an agent, where every program runs as `uid`.
    final class World {
        let sandbox: CLISandbox
        let uid: UInt32
        let vault: String
        let socket: String
        let rulesFile: String
        var environment: [String: String]
        private(set) var agent: RunningCLI?

        init(rules: String?, uid: UInt32 = 65534) throws {
            self.uid = uid
            sandbox = try CLISandbox()
            vault = try CLIBinary.path()
            let root = sandbox.root
            for folder in ["bin", "config", "config/vault", "agent"] {
                try FileManager.default.createDirectory(atPath: root + "/" + folder, withIntermediateDirectories: false,
                                                        attributes: [.posixPermissions: 0o700])
            }
            socket = root + "/agent/agent.sock"
            rulesFile = root + "/config/vault/agent.json"
            if let rules { _ = sandbox.privateFile("config/vault/agent.json", rules) }
            _ = try sandbox.keyFile()
            try FileManager.default.createSymbolicLink(atPath: root + "/bin/git-credential-vault", withDestinationPath: vault)
            environment = ["HOME": root, "VAULT_DIR": root + "/vault", "XDG_CONFIG_HOME": root + "/config", "VAULT_AGENT_SOCK": socket,
                           "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": root + "/gitconfig",
                           "GIT_TERMINAL_PROMPT": "0"]
            try giveAway(root)
            let made = try run(vault, ["init", "--key-file", root + "/alice.key"])
            guard made.status == 0 else { throw CLITestFailure("init as uid \(uid): \(made.stderrText)") }
        }

        /// Hands `path` and everything under it to the world's user.
        func giveAway(_ path: String) throws {
            lchown(path, uid, uid)
            for item in FileManager.default.enumerator(atPath: path)?.compactMap({ $0 as? String }) ?? [] {
                lchown(path + "/" + item, uid, uid)
            }
        }

        /// Runs `executable arguments` as the world's user.
        func run(_ executable: String, _ arguments: [String], stdin: String = "", environment extra: [String: String] = [:],
                 timeout: Double = 60, sourceLocation: SourceLocation = #_sourceLocation) throws -> CLIResult {
            try ExternalProcess.run("/usr/bin/setpriv", ["--reuid=\(uid)", "--regid=\(uid)", "--clear-groups", executable] + arguments,
                                    environment: environment.merging(extra) { _, new in new }, stdin: Data(stdin.utf8),
                                    directory: sandbox.root, timeout: timeout, sourceLocation: sourceLocation)
        }

        /// `git` with the helper configured by absolute path, as the world's user.
        func git(_ arguments: [String], stdin: String) throws -> CLIResult {
            try run("/usr/bin/git", ["-c", "credential.helper=", "-c", "credential.helper=\(sandbox.root)/bin/git-credential-vault"] + arguments,
                    stdin: stdin)
        }

        /// Starts the agent as the world's user, waits for its socket and gives it the vault's key.
        func startAgent() throws {
            let started = try RunningCLI(["--reuid=\(uid)", "--regid=\(uid)", "--clear-groups", vault, "agent"], environment: environment,
                                         executable: "/usr/bin/setpriv")
            agent = started
            let deadline = Date().addingTimeInterval(20)
            while !FileManager.default.fileExists(atPath: socket), started.process.isRunning, Date() < deadline { usleep(10_000) }
            guard FileManager.default.fileExists(atPath: socket) else { throw CLITestFailure("the agent did not start: \(stopAgent().stderrText)") }
            let unlocked = try run(vault, ["unlock"], environment: ["VAULT_KEY_FILE": sandbox.root + "/alice.key"])
            guard unlocked.status == 0 else { throw CLITestFailure("unlock: \(unlocked.stderrText)") }
        }

        /// Stops the agent and returns its log.
        @discardableResult
        func stopAgent() -> CLIResult {
            guard let agent else { return CLIResult(status: -1, stdout: Data(), stderr: Data()) }
            kill(agent.pid, SIGTERM)
            return agent.finish(timeout: 20)
        }

        /// Stores git's credential through git and returns the entry's name.
        func approve() throws -> String {
            let approved = try git(["credential", "approve"], stdin: "protocol=https\nhost=example.test\nusername=alice\npassword=\(password)\n\n")
            guard approved.status == 0 else { throw CLITestFailure("approve: \(approved.stderrText)") }
            let listed = try run(vault, ["list", "--json"])
            guard let name = listed.stdoutText.components(separatedBy: "\"").first(where: { $0.hasPrefix("git:") }) else {
                throw CLITestFailure("no git entry: \(listed.stdoutText) \(listed.stderrText)")
            }
            return name
        }

        var password: String { AgentCallerIdentityTests.password }

        deinit {
            if let agent, agent.process.isRunning { kill(agent.pid, SIGKILL) }
            sandbox.cleanUp()
        }
    }

    // MARK: The git rule (issue 36, point 1)

    @Test(.enabled(if: AgentCallerIdentityTests.canSwitchUser))
    func theDocumentedGitRuleLetsGitsHelperThroughForAnOrdinaryUser() throws {
        guard ExternalProcess.required("git") != nil else { return }
        let world = try World(rules: Self.documentedRules)
        try world.startAgent()
        let name = try world.approve()
        let filled = try world.git(["credential", "fill"], stdin: Self.request)
        #expect(filled.status == 0, "\(filled.stderrText)")
        #expect(filled.stdoutText.contains("password=\(Self.password)"), "git's helper, started by git, is allowed: \(filled.stderrText)")
        let direct = try world.run(world.vault, ["get", name])
        #expect(direct.status == 77, "\(direct.stderrText)")
        #expect(direct.stderrText.contains("nobody else reads git entries"))
        #expect(!direct.stdoutText.contains(Self.password))
        let byHand = try world.run(world.sandbox.root + "/bin/git-credential-vault", ["get"], stdin: Self.request)
        #expect(!byHand.stdoutText.contains(Self.password), "the helper run by hand has no git above it")
        let log = world.stopAgent()
        #expect(log.stderrText.contains("refused get of '\(name)' to vault (pid"), "\(log.stderrText)")
        #expect(!log.stderrText.contains("; )"), "the chain is never empty: an unreadable executable is 'unknown'")
        #expect(!log.stderrText.contains(Self.password))
    }

    // MARK: Mount namespaces (point 2)

    /// `unshare -Urm` works here (user namespaces enabled); else the test skips, except in CI.
    static func userNamespacesWork(_ world: World) throws -> Bool {
        let probe = try world.run("/usr/bin/unshare", ["-Urm", "true"])
        if probe.status != 0, ExternalProcess.isCI { Issue.record("unshare -Urm fails here: \(probe.stderrText)") }
        return probe.status == 0
    }

    /// As an ordinary user and as root (whose agent reads every /proc link): git in a mount
    /// namespace of its own is still git, a shell bind-mounted over /usr/bin/git there is not.
    @Test(.enabled(if: AgentCallerIdentityTests.canSwitchUser && FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare")),
          arguments: [UInt32(65534), 0])
    func aShellBindMountedOverGitInAnotherMountNamespaceIsNotGit(uid: UInt32) throws {
        guard ExternalProcess.required("git") != nil else { return }
        let world = try World(rules: Self.documentedRules, uid: uid)
        guard try Self.userNamespacesWork(world) else { return }
        try world.startAgent()
        let helper = world.sandbox.root + "/bin/git-credential-vault"
        _ = try world.approve()
        let request = "printf 'protocol=https\\nhost=example.test\\n\\n'"
        // The control: the real git, in a mount namespace of its own, is the same file as /usr/bin/git here.
        let real = try world.run("/usr/bin/unshare", ["-Urm", "--propagation", "private", "sh", "-c", "\(request) | git -c credential.helper= -c credential.helper=\(helper) credential fill"])
        #expect(real.stdoutText.contains("password=\(Self.password)"), "\(real.stderrText)")
        // The attack: dash mounted over /usr/bin/git there; /proc/PID/exe of that shell reads "/usr/bin/git".
        let forged = try world.run("/usr/bin/unshare", ["-Urm", "--propagation", "private", "sh", "-c",
                                                        "mount --bind /bin/dash /usr/bin/git && \(request) | /usr/bin/git -c '\(helper) get'"])
        #expect(!forged.stdoutText.contains(Self.password), "a shell that looks like /usr/bin/git in its own namespace is not git")
        let log = world.stopAgent()
        #expect(log.stderrText.contains("refused get of 'git:"), "\(log.stderrText)")
    }

    // MARK: Identity at accept (point 3)

    /// A client that connects, asks `status` (so the agent has accepted it), hands the connection
    /// to a child and exits; the child asks for the entry once its parent is gone. Prints what the
    /// agent answered: "served" or the refusal's code.
    static let handOver = #"""
        import json, os, socket, struct, sys
        def send(s, header):
            body = json.dumps(header).encode()
            s.sendall(struct.pack(">I", len(body)) + body)
        def exactly(s, n):
            data = b""
            while len(data) < n:
                chunk = s.recv(n - len(data))
                if not chunk: raise SystemExit("closed")
                data += chunk
            return data
        def receive(s):
            header = json.loads(exactly(s, struct.unpack(">I", exactly(s, 4))[0]))
            for _ in range(header.get("secrets", 0)):
                exactly(s, struct.unpack(">I", exactly(s, 4))[0])
            return header
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(20)
        s.connect(os.environ["VAULT_AGENT_SOCK"])
        send(s, {"op": "status"})
        receive(s)
        parent_gone_read, parent_gone_write = os.pipe()
        if os.fork() != 0:
            os._exit(0)
        os.close(parent_gone_write)
        os.read(parent_gone_read, 1)   # end of file: the process that connected has exited
        send(s, {"op": "get", "directory": os.path.realpath(os.environ["VAULT_DIR"]), "name": "api", "owner": ""})
        answer = receive(s)
        print("served" if answer.get("ok") else answer.get("code"), flush=True)
        """#

    @Test(.enabled(if: AgentCallerIdentityTests.canSwitchUser))
    func theCallerIsIdentifiedWhenItConnectsNotWhenItAsks() throws {
        let world = try World(rules: Self.backupRules)
        try world.startAgent()
        #expect(try world.run(world.vault, ["add", "api"], stdin: "api-secret").status == 0)
        let tool = world.sandbox.path("backup-tool"), script = world.sandbox.path("hand-over.py")
        try FileManager.default.copyItem(atPath: URL(fileURLWithPath: "/bin/sh").resolvingSymlinksInPath().path, toPath: tool)
        FileManager.default.createFile(atPath: script, contents: Data(Self.handOver.utf8), attributes: [.posixPermissions: 0o600])
        try world.giveAway(tool)
        try world.giveAway(script)
        // The control: a connection handed over by a process no rule concerns is served.
        let plain = try world.run("/usr/bin/python3", [script])
        #expect(plain.stdoutText == "served\n", "\(plain.stdoutText) \(plain.stderrText)")
        // Connected under the backup tool, asked after that process exited: its identity is the one taken at accept.
        let handedOver = try world.run(tool, ["-c", "/usr/bin/python3 '\(script)'; exit $?"])
        #expect(handedOver.stdoutText == "deniedByRule\n", "\(handedOver.stdoutText) \(handedOver.stderrText)")
        let log = world.stopAgent()
        #expect(log.stderrText.contains("backup-tool"), "the refusal names the chain read at accept: \(log.stderrText)")
    }

    // MARK: The rules file, as OpenSSH's StrictModes (point 5)

    @Test(.enabled(if: AgentCallerIdentityTests.canSwitchUser))
    func aSymlinkedRulesFileIsRefused() throws {
        let world = try World(rules: nil)
        _ = world.sandbox.privateFile("config/real.json", Self.backupRules)
        try FileManager.default.createSymbolicLink(atPath: world.rulesFile, withDestinationPath: world.sandbox.root + "/config/real.json")
        try world.giveAway(world.sandbox.root)
        let started = try world.run(world.vault, ["agent"], timeout: 30)
        #expect(started.status == 77, "\(started.stderrText)")
        #expect(started.stderrText.contains("symbolic link"))
    }

    @Test(.enabled(if: AgentCallerIdentityTests.canSwitchUser))
    func aRulesFileInAFolderOthersCanWriteToIsRefused() throws {
        let world = try World(rules: Self.backupRules)
        chmod(world.sandbox.root + "/config/vault", 0o775)
        let groupWritable = try world.run(world.vault, ["agent"], timeout: 30)
        #expect(groupWritable.status == 77, "\(groupWritable.stderrText)")
        #expect(groupWritable.stderrText.contains("config/vault"), "the message names the folder: \(groupWritable.stderrText)")
        chmod(world.sandbox.root + "/config/vault", 0o700)
        chmod(world.sandbox.root + "/config", 0o777)
        #expect(try world.run(world.vault, ["agent"], timeout: 30).status == 77, "a folder higher up counts too")
        chmod(world.sandbox.root + "/config", 0o700)
        chmod(world.rulesFile, 0o620)
        #expect(try world.run(world.vault, ["agent"], timeout: 30).status == 77, "a group-writable file")
    }

    /// Review F7: a sticky folder stops others replacing the file, not creating it; one of theirs
    /// there would stop the agent (or, once it runs, refuse every entry request) in words about the
    /// file's owner. The rules file's own folder must be writable by nobody else, sticky or not.
    @Test(.enabled(if: AgentCallerIdentityTests.canSwitchUser))
    func aRulesFileInAStickyFolderOthersCanWriteToIsRefused() throws {
        let world = try World(rules: Self.backupRules)
        let folder = world.sandbox.root + "/config/vault"
        chmod(folder, 0o1777)
        let sticky = try world.run(world.vault, ["agent"], timeout: 30)
        #expect(sticky.status == 77, "\(sticky.stderrText)")
        #expect(sticky.stderrText.contains("group or others can create files in its folder (mode 1777)"), "\(sticky.stderrText)")
        #expect(sticky.stderrText.contains(folder) && sticky.stderrText.contains("chmod go-w"), "names the folder and the fix: \(sticky.stderrText)")
        chmod(folder, 0o1770)
        #expect(try world.run(world.vault, ["agent"], timeout: 30).status == 77, "group-writable and sticky")
        // Another user's file planted there: the message is still about the folder, the cause.
        chmod(folder, 0o1777)
        try FileManager.default.removeItem(atPath: world.rulesFile)
        FileManager.default.createFile(atPath: world.rulesFile, contents: Data(#"{ "rules": [] }"#.utf8), attributes: [.posixPermissions: 0o644])
        lchown(world.rulesFile, 65533, 65533)
        let planted = try world.run(world.vault, ["agent"], timeout: 30)
        #expect(planted.status == 77, "\(planted.stderrText)")
        #expect(planted.stderrText.contains("create files in its folder"), "\(planted.stderrText)")
    }

    @Test(.enabled(if: AgentCallerIdentityTests.canSwitchUser))
    func aRulesFileThatDisappearsRefusesEveryEntryRequestUntilItIsBack() throws {
        let world = try World(rules: Self.backupRules)
        try world.startAgent()
        #expect(try world.run(world.vault, ["add", "api"], stdin: "api-secret").status == 0)
        #expect(try world.run(world.vault, ["get", "api"]).stdoutText == "api-secret")
        let kept = try Data(contentsOf: URL(fileURLWithPath: world.rulesFile))
        try FileManager.default.removeItem(atPath: world.rulesFile)
        let got = try world.run(world.vault, ["get", "api"])
        #expect(got.status == 77, "\(got.stderrText)")
        #expect(got.stderrText.contains("rules file is gone"))
        #expect(!got.stdoutText.contains("api-secret"))
        #expect(try world.run(world.vault, ["list"]).status == 77)
        #expect(try world.run(world.vault, ["add", "other"], stdin: "x").status == 77)
        #expect(try world.run(world.vault, ["rm", "api"]).status == 77)
        // A symlink put in its place is no better.
        _ = world.sandbox.privateFile("config/elsewhere.json", #"{ "rules": [] }"#)
        try FileManager.default.createSymbolicLink(atPath: world.rulesFile, withDestinationPath: world.sandbox.root + "/config/elsewhere.json")
        try world.giveAway(world.sandbox.root)
        #expect(try world.run(world.vault, ["get", "api"]).status == 77)
        try FileManager.default.removeItem(atPath: world.rulesFile)
        FileManager.default.createFile(atPath: world.rulesFile, contents: kept, attributes: [.posixPermissions: 0o600])
        try world.giveAway(world.rulesFile)
        #expect(try world.run(world.vault, ["get", "api"]).stdoutText == "api-secret", "served again once the file is back")
        let log = world.stopAgent()
        #expect(log.stderrText.contains("the rules file is gone; refusing entry requests until it is back"))
    }
}
