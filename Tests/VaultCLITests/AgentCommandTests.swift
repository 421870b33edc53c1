#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Testing
import TestScheduling

/// `vault agent`, `vault unlock`, `vault lock`: a passphrase vault used without its passphrase while
/// the agent holds it; every failure bounded; the agent refuses what it must and keeps serving.
@Suite(.blockingWork, .serialized) struct AgentCommandTests {
    static let passphrase = "correct horse battery staple"
    static let secret = "agent-secret-\(UUID().uuidString)"

    /// A sandbox with a passphrase vault holding `api`, an agent socket folder (0700) and a running agent.
    final class World {
        let sandbox: CLISandbox
        let agent: RunningCLI
        let socket: String
        /// The environment of a command with no key at all, pointed at the agent.
        let environment: [String: String]

        init(agentArguments: [String] = []) throws {
            sandbox = try CLISandbox()
            let folder = sandbox.path("agent")
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
            socket = folder + "/agent.sock"
            environment = ["VAULT_AGENT_SOCK": socket]
            let withPassphrase = ["VAULT_PASSPHRASE": AgentCommandTests.passphrase, "VAULT_AGENT_SOCK": socket]
            guard try sandbox.run(["init", "--no-agent"], environment: withPassphrase).status == 0,
                  try sandbox.run(["add", "api", "--no-agent"], stdin: Data(text: AgentCommandTests.secret), environment: withPassphrase).status == 0 else {
                throw CLITestFailure("could not make the vault")
            }
            agent = try sandbox.start(["agent"] + agentArguments, environment: environment)
            let deadline = Date().addingTimeInterval(20)
            while !FileManager.default.fileExists(atPath: socket), Date() < deadline { usleep(10_000) }
            guard FileManager.default.fileExists(atPath: socket) else { throw CLITestFailure("the agent did not start") }
        }

        func vault(_ arguments: [String], stdin: Data = Data(), environment extra: [String: String] = [:]) throws -> CLIResult {
            try sandbox.run(arguments, stdin: stdin, environment: environment.merging(extra) { _, new in new })
        }

        func unlock() throws {
            let result = try vault(["unlock"], environment: ["VAULT_PASSPHRASE": AgentCommandTests.passphrase])
            guard result.status == 0 else { throw CLITestFailure("unlock failed: \(result.stderrText)") }
        }

        func status() throws -> [String: Any] {
            let result = try vault(["agent", "--status", "--json"])
            return (try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any]) ?? [:]
        }

        /// Stops the agent with SIGTERM and returns what it printed.
        func stop() -> CLIResult {
            kill(agent.pid, SIGTERM)
            return agent.finish(timeout: 20)
        }

        deinit {
            if agent.process.isRunning { kill(agent.pid, SIGKILL) }
            sandbox.cleanUp()
        }
    }

    @Test func anUnlockedPassphraseVaultNeedsNoPassphrase() throws {
        let world = try World()
        let before = try world.vault(["get", "api"])
        #expect(before.status == 64, "no key and not unlocked: the usual 'no key' error")
        let wrong = try world.vault(["unlock"], environment: ["VAULT_PASSPHRASE": "not the passphrase at all"])
        #expect(wrong.status == 77)
        try world.unlock()
        let got = try world.vault(["get", "api"])
        #expect(got.status == 0, "\(got.stderrText)")
        #expect(got.stdoutText == Self.secret)
        #expect(try world.vault(["add", "second"], stdin: Data(text: "two")).status == 0)
        #expect(try world.vault(["list"]).stdoutText.contains("second"))
        #expect(try world.vault(["inspect", "second"]).status == 0)
        let exec = try world.vault(["exec", "--env", "S=second", "--", "sh", "-c", "printf %s \"$S\""])
        #expect(exec.stdoutText == "two")
        #expect(try world.vault(["rm", "second"]).status == 0)
        #expect(try world.vault(["get", "second"]).status == 66)
        #expect(try world.vault(["get", "api", "--no-agent"]).status == 64, "--no-agent skips the agent")
        // What the agent wrote is what the vault holds.
        let direct = try world.vault(["get", "api", "--no-agent"], environment: ["VAULT_PASSPHRASE": Self.passphrase])
        #expect(direct.stdoutText == Self.secret)
        let log = world.stop()
        #expect(log.status == 0)
        #expect(!log.stderr.contains(Data(text: Self.secret)), "the agent never logs a secret")
        #expect(!log.stderr.contains(Data(text: Self.passphrase)))
        #expect(!FileManager.default.fileExists(atPath: world.socket), "the socket is removed on SIGTERM")
    }

    @Test func theGitAndDockerHelpersUseTheAgentForEveryAction() throws {
        let world = try World()
        try world.unlock()
        let bin = world.sandbox.path("bin")
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        for name in ["git-credential-vault", "docker-credential-vault"] {
            try FileManager.default.createSymbolicLink(atPath: bin + "/" + name, withDestinationPath: try CLIBinary.path())
        }
        let keyless = world.sandbox.environment.merging(world.environment) { _, new in new }
        func helper(_ name: String, _ action: String, _ input: String) throws -> CLIResult {
            try ExternalProcess.run(bin + "/" + name, [action], environment: keyless, stdin: Data(input.utf8), timeout: 30)
        }
        // docker: store, get, list, erase, with no key anywhere but in the agent.
        let stored = try helper("docker-credential-vault", "store", #"{"ServerURL":"registry.test","Username":"ann","Secret":"d-secret"}"# + "\n")
        #expect(stored.status == 0, "\(stored.stdoutText)\(stored.stderrText)")
        #expect(try helper("docker-credential-vault", "get", "registry.test").stdoutText.contains("d-secret"))
        let listed = try helper("docker-credential-vault", "list", "")
        #expect(try JSONSerialization.jsonObject(with: listed.stdout) as? [String: String] == ["registry.test": "ann"], "\(listed.stdoutText)")
        #expect(try helper("docker-credential-vault", "erase", "registry.test").status == 0)
        #expect(try helper("docker-credential-vault", "get", "registry.test").stdoutText == "credentials not found in native keychain\n")
        // git: store, get, erase (a wrong password erases nothing, the right one erases).
        let request = "protocol=https\nhost=git.test\nusername=bo\n"
        #expect(try helper("git-credential-vault", "store", request + "password=g-secret\n\n").status == 0)
        #expect(try helper("git-credential-vault", "get", "protocol=https\nhost=git.test\n\n").stdoutText.contains("password=g-secret"))
        #expect(try helper("git-credential-vault", "erase", request + "password=other\n\n").status == 0)
        #expect(try helper("git-credential-vault", "get", "protocol=https\nhost=git.test\n\n").stdoutText.contains("password=g-secret"))
        #expect(try helper("git-credential-vault", "erase", request + "password=g-secret\n\n").status == 0)
        #expect(try helper("git-credential-vault", "get", "protocol=https\nhost=git.test\n\n").stdout.isEmpty)
        // What remains, seen directly with the passphrase: only the vault's own entry.
        let direct = try world.vault(["list", "--no-agent"], environment: ["VAULT_PASSPHRASE": Self.passphrase])
        #expect(direct.status == 0 && direct.stdoutText.contains("api"), "\(direct.stderrText)")
        #expect(!direct.stdoutText.contains("git:") && !direct.stdoutText.contains("docker:"), "\(direct.stdoutText)")
        // Locked again: the helpers have no key (docker's output says so, exit 1).
        #expect(try world.vault(["lock"]).status == 0)
        let locked = try helper("docker-credential-vault", "list", "")
        #expect(locked.status == 1 && locked.stdoutText.hasPrefix("vault: "), "\(locked.stdoutText)")
    }

    @Test func statusJSONHasTheContractFields() throws {
        let world = try World()
        try world.unlock()
        let status = try world.status()
        #expect(status["pid"] as? Int == Int(world.agent.pid))
        #expect(status["socket"] as? String == world.socket)
        let vaults = try #require(status["vaults"] as? [[String: Any]])
        #expect(vaults.count == 1)
        #expect((vaults.first?["directory"] as? String)?.hasSuffix("/vault") == true)
        #expect(vaults.first?["unlockedAt"] is String)
        #expect(vaults.first?["expiresAt"] is String)
        #expect(try world.vault(["lock"]).status == 0)
        #expect((try world.status()["vaults"] as? [Any])?.isEmpty == true, "lock forgets every key")
        #expect(try world.vault(["get", "api"]).status == 64)
    }

    @Test func withNoAgentTheAgentCommandsExit69() throws {
        let sandbox = try CLISandbox()
        defer { sandbox.cleanUp() }
        let nowhere = ["VAULT_AGENT_SOCK": sandbox.path("none/agent.sock"), "VAULT_PASSPHRASE": Self.passphrase]
        #expect(try sandbox.run(["init"], environment: nowhere).status == 0)
        let unlock = try sandbox.run(["unlock"], environment: nowhere)
        #expect(unlock.status == 69)
        #expect(unlock.stderrText.contains("vault agent"))
        #expect(try sandbox.run(["lock"], environment: nowhere).status == 69)
        #expect(try sandbox.run(["agent", "--status"], environment: nowhere).status == 69)
        #expect(try sandbox.run(["get", "x"], environment: nowhere).status == 66, "commands work as before without an agent")
        let noSocket = try sandbox.run(["agent"], environment: ["XDG_RUNTIME_DIR": ""])
        #expect(noSocket.status == 64, "with neither variable the agent does not start")
    }

    @Test func aDirectWriterIsSeenAndAKeyChangeLocksTheVault() throws {
        let world = try World()
        try world.unlock()
        let direct = ["VAULT_PASSPHRASE": Self.passphrase]
        #expect(try world.vault(["add", "api", "--replace", "--no-agent"], stdin: Data(text: "changed"), environment: direct).status == 0)
        #expect(try world.vault(["get", "api"]).stdoutText == "changed", "the agent's next answer reflects the write")
        let newPassphrase = world.sandbox.privateFile("new-passphrase", "another long passphrase here\n")
        let passwd = try world.vault(["passwd", "--no-agent", "--new-passphrase-file", newPassphrase], environment: direct)
        #expect(passwd.status == 0, "\(passwd.stderrText)")
        let after = try world.vault(["get", "api"])
        #expect(after.status == 64, "the agent forgot the vault (no stale key); without a key the command stops")
        #expect((try world.status()["vaults"] as? [Any])?.isEmpty == true)
    }

    /// An older vault file put back after a direct write: the agent, which read the old file
    /// before and never saw the newer one, refuses it as a direct open does (65), through this
    /// machine's rollback record.
    @Test func theAgentRefusesARolledBackVaultAsADirectOpenDoes() throws {
        let world = try World()
        try world.unlock()
        #expect(try world.vault(["get", "api"]).stdoutText == Self.secret, "the agent has read this generation")
        let old = try Data(contentsOf: URL(fileURLWithPath: world.sandbox.vaultFile))
        let direct = ["VAULT_PASSPHRASE": Self.passphrase]
        #expect(try world.vault(["add", "newer", "--no-agent"], stdin: Data(text: "n"), environment: direct).status == 0)
        let putBack = world.sandbox.vaultFile + ".old"
        FileManager.default.createFile(atPath: putBack, contents: old, attributes: [.posixPermissions: 0o600])
        #expect(rename(putBack, world.sandbox.vaultFile) == 0)
        let directly = try world.vault(["get", "api", "--no-agent"], environment: direct)
        #expect(directly.status == 65, "the control: a direct open refuses it (\(directly.stderrText))")
        let throughAgent = try world.vault(["get", "api"])
        #expect(throughAgent.status == 65, "\(throughAgent.stderrText)")
        #expect(throughAgent.stdoutText.isEmpty)
        #expect(throughAgent.stderrText.contains("older than generation"))
    }

    /// `$VAULT_AGENT_SOCK` in a folder that does not exist yet: the agent makes it 0700 (the last
    /// component only); with its parent missing too it says what to do, not "start the agent".
    @Test func theAgentMakesItsMissingSocketFolder() throws {
        let sandbox = try CLISandbox()
        defer { sandbox.cleanUp() }
        let socket = sandbox.path("fresh/agent.sock")
        let agent = try sandbox.start(["agent"], environment: ["VAULT_AGENT_SOCK": socket])
        defer { kill(agent.pid, SIGTERM); _ = agent.finish(timeout: 20) }
        let deadline = Date().addingTimeInterval(20)
        while !FileManager.default.fileExists(atPath: socket), agent.process.isRunning, Date() < deadline { usleep(10_000) }
        #expect(FileManager.default.fileExists(atPath: socket), "the agent started")
        let mode = try FileManager.default.attributesOfItem(atPath: sandbox.path("fresh"))[.posixPermissions] as? Int
        #expect(mode == 0o700)
        #expect(try sandbox.run(["agent", "--status"], environment: ["VAULT_AGENT_SOCK": socket]).status == 0)
        let deeper = try sandbox.run(["agent"], environment: ["VAULT_AGENT_SOCK": sandbox.path("a/b/agent.sock")])
        #expect(deeper.status == 66, "\(deeper.stderrText)")
        #expect(deeper.stderrText.contains("mkdir -p -m 700"), "\(deeper.stderrText)")
        #expect(!deeper.stderrText.contains("start the agent"))
        #expect(!FileManager.default.fileExists(atPath: sandbox.path("a")), "nothing above the last component is made")
    }

    @Test func lockWhileRequestsAreInFlight() throws {
        let world = try World()
        try world.unlock()
        let running = try (0..<12).map { _ in try world.sandbox.start(["get", "api"], environment: world.environment) }
        #expect(try world.vault(["lock"]).status == 0)
        for result in running.map({ $0.finish(timeout: 60) }) {
            // Each one was answered before the lock (the secret) or found the vault locked and,
            // with no key of its own, stopped (64); none saw anything else.
            #expect((result.status == 0 && result.stdoutText == Self.secret) || result.status == 64, "\(result.status) \(result.stderrText)")
        }
        #expect((try world.status()["vaults"] as? [Any])?.isEmpty == true)
        #expect(try world.vault(["get", "api"]).status == 64)
    }

    /// `vault unlock` with `VAULT_PINENTRY` (gpg-agent's convention): the Assuan exchange with a
    /// pinentry program (a stand-in here, for the cases a real one cannot be made to answer: escapes, cancel), its
    /// percent-escapes decoded, and a cancelled pinentry refused.
    @Test func unlockAsksThroughPinentry() throws {
        let world = try World()
        let script = """
            #!/usr/bin/env python3
            import sys
            cancel = len(sys.argv) > 1
            print("OK Pleased to meet you", flush=True)
            for line in sys.stdin:
                command = line.strip()
                if command.startswith("GETPIN"):
                    if cancel:
                        print("ERR 83886179 Operation cancelled <Pinentry>", flush=True)
                        continue
                    print("D correct%20horse%20battery%20staple", flush=True)
                if command == "BYE":
                    print("OK closing connection", flush=True)
                    break
                print("OK", flush=True)
            """
        let pinentry = world.sandbox.path("pinentry-stand-in")
        FileManager.default.createFile(atPath: pinentry, contents: Data(script.utf8), attributes: [.posixPermissions: 0o755])
        let cancelling = world.sandbox.path("pinentry-cancel")
        FileManager.default.createFile(atPath: cancelling, contents: Data("#!/bin/sh\nexec '\(pinentry)' cancel\n".utf8),
                                       attributes: [.posixPermissions: 0o755])
        let cancelled = try world.vault(["unlock"], environment: ["VAULT_PINENTRY": cancelling])
        #expect(cancelled.status == 64)
        #expect(cancelled.stderrText.contains("cancelled"))
        let unlocked = try world.vault(["unlock"], environment: ["VAULT_PINENTRY": pinentry])
        #expect(unlocked.status == 0, "\(unlocked.stderrText)")
        #expect(try world.vault(["get", "api"]).stdoutText == Self.secret)
    }

    /// The real `pinentry-curses` (Debian's, as gpg-agent users have it) on a pseudo-terminal: vault
    /// tells it the terminal (`OPTION ttyname`, `ttytype`), the passphrase typed there unlocks, a
    /// wrong one is refused (77), and the passphrase never appears on the screen.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/pinentry-curses")
                   && FileManager.default.isExecutableFile(atPath: "/usr/bin/python3")))
    func unlockAsksThroughTheRealPinentryCurses() throws {
        let world = try World()
        // Runs `vault unlock` on a pty, waits for the pinentry's prompt, types the line read from stdin, Enter.
        let driver = #"""
            import os, pty, select, sys, time
            typed_line = sys.stdin.buffer.readline().rstrip(b"\n")
            pid, fd = pty.fork()
            if pid == 0:
                os.execv(sys.argv[1], [sys.argv[1], "unlock"])
            screen, typed, deadline = b"", False, time.time() + 30
            while time.time() < deadline:
                ready, _, _ = select.select([fd], [], [], 0.1)
                if ready:
                    try:
                        chunk = os.read(fd, 4096)
                    except OSError:
                        break
                    if not chunk:
                        break
                    screen += chunk
                if not typed and b"Passphrase" in screen:
                    time.sleep(0.2)
                    os.write(fd, typed_line + b"\r")
                    typed = True
            _, status = os.waitpid(pid, 0)
            sys.stdout.buffer.write(b"typed=%d status=%d\n" % (typed, os.waitstatus_to_exitcode(status)))
            sys.stdout.buffer.write(screen)
            """#
        let environment = world.sandbox.environment.merging(world.environment) { _, new in new }
            .merging(["VAULT_PINENTRY": "/usr/bin/pinentry-curses", "TERM": "xterm"]) { _, new in new }
        func unlock(typing passphrase: String) throws -> String {
            try ExternalProcess.run("/usr/bin/python3", ["-c", driver, try CLIBinary.path()], environment: environment,
                                    stdin: Data((passphrase + "\n").utf8), timeout: 60).stdoutText
        }
        let wrong = try unlock(typing: "not the passphrase")
        #expect(wrong.hasPrefix("typed=1 status=77"), "\(wrong.prefix(40))")
        #expect(try world.vault(["get", "api"]).status == 64)
        let right = try unlock(typing: Self.passphrase)
        #expect(right.hasPrefix("typed=1 status=0"), "\(right.prefix(40))")
        #expect(right.contains("Unlocked"))
        #expect(!right.contains(Self.passphrase), "the pinentry shows stars, never the passphrase")
        #expect(try world.vault(["get", "api"]).stdoutText == Self.secret)
    }

    @Test func keysAreForgottenAfterTheIdleTimeout() throws {
        // 3 s, not 1: on two busy cores the unlock and the first get can take a second between them.
        let world = try World(agentArguments: ["--idle-timeout", "3s"])
        try world.unlock()
        #expect(try world.vault(["get", "api"]).status == 0)
        let deadline = Date().addingTimeInterval(15)
        var vaults: [Any] = [1]
        while !vaults.isEmpty, Date() < deadline {
            usleep(200_000)
            vaults = try world.status()["vaults"] as? [Any] ?? []
        }
        #expect(vaults.isEmpty)
        #expect(try world.vault(["get", "api"]).status == 64)
    }

    @Test func unsafeSocketsAreRefused() throws {
        let sandbox = try CLISandbox()
        defer { sandbox.cleanUp() }
        let open = sandbox.path("open")
        try FileManager.default.createDirectory(atPath: open, withIntermediateDirectories: false)
        chmod(open, 0o777)
        let started = try sandbox.run(["agent"], environment: ["VAULT_AGENT_SOCK": open + "/agent.sock"])
        #expect(started.status == 77, "a folder others can write to: \(started.stderrText)")
        let folder = sandbox.path("private")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        try FileManager.default.createSymbolicLink(atPath: folder + "/agent.sock", withDestinationPath: "/tmp/elsewhere.sock")
        let linked = try sandbox.run(["agent", "--status"], environment: ["VAULT_AGENT_SOCK": folder + "/agent.sock"])
        #expect(linked.status == 77, "a symlinked socket: \(linked.stderrText)")
        #expect(try sandbox.run(["agent"], environment: ["VAULT_AGENT_SOCK": folder + "/agent.sock"]).status == 77)
    }

    @Test func malformedEndlessAndIdleConnectionsDoNotStopTheAgent() throws {
        let world = try World()
        try world.unlock()
        // A frame that announces 4 GiB, a header that never ends, and more idle connections than the cap.
        let huge = try Self.connect(world.socket)
        _ = [UInt8](arrayLiteral: 0xFF, 0xFF, 0xFF, 0xFF).withUnsafeBytes { write(huge, $0.baseAddress, 4) }
        let partial = try Self.connect(world.socket)
        _ = [UInt8](arrayLiteral: 0, 0, 0, 100, 0x7B).withUnsafeBytes { write(partial, $0.baseAddress, 5) }
        var idle: [Int32] = []
        for _ in 0..<80 { if let descriptor = try? Self.connect(world.socket) { idle.append(descriptor) } }
        defer { for descriptor in idle + [huge, partial] { close(descriptor) } }
        var buffer = [UInt8](repeating: 0, count: 16)
        var poller = pollfd(fd: huge, events: Int16(POLLIN), revents: 0)
        #expect(poll(&poller, 1, 5000) == 1)
        #expect(read(huge, &buffer, 16) <= 0, "the oversized request was dropped without an answer")
        let got = try world.vault(["get", "api"])
        #expect(got.status == 0, "the agent still serves: \(got.stderrText)")
        #expect(got.stdoutText == Self.secret)
    }

    /// Well-framed headers that are not a request, as any program could send them: each gets its
    /// own `invalidInput` answer (a field of the wrong type is no longer read as absent), and the
    /// same connection serves the next request.
    @Test func aMalformedRequestIsAnsweredWithItsErrorAndTheConnectionGoesOn() throws {
        let world = try World()
        try world.unlock()
        let resolved = try #require(realpath(world.sandbox.vaultDirectory, nil))
        defer { free(resolved) }
        let directory = String(cString: resolved)
        let connection = try Self.connect(world.socket)
        defer { close(connection) }
        func ask(_ json: String) throws -> [String: Any] {
            let body = Array(json.utf8)
            let length = UInt32(body.count)
            let frame = [UInt8(length >> 24), UInt8((length >> 16) & 0xFF), UInt8((length >> 8) & 0xFF), UInt8(length & 0xFF)] + body
            guard frame.withUnsafeBytes({ send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == frame.count else {
                throw CLITestFailure("could not send")
            }
            func readExactly(_ count: Int) throws -> [UInt8] {
                var bytes: [UInt8] = []
                while bytes.count < count {
                    var poller = pollfd(fd: connection, events: Int16(POLLIN), revents: 0)
                    guard poll(&poller, 1, 10_000) == 1 else { throw CLITestFailure("no answer within 10 s") }
                    var chunk = [UInt8](repeating: 0, count: count - bytes.count)
                    let got = read(connection, &chunk, chunk.count)
                    guard got > 0 else { throw CLITestFailure("the agent closed the connection") }
                    bytes += chunk[0..<got]
                }
                return bytes
            }
            let prefix = try readExactly(4)
            let header = try readExactly(Int(prefix[0]) << 24 | Int(prefix[1]) << 16 | Int(prefix[2]) << 8 | Int(prefix[3]))
            return (try JSONSerialization.jsonObject(with: Data(header)) as? [String: Any]) ?? [:]
        }
        let quoted = String(decoding: try JSONSerialization.data(withJSONObject: [directory]), as: UTF8.self).dropFirst().dropLast()
        let malformed: [(String, String)] = [
            (#"{"op": "get", "directory": \#(quoted), "name": "api", "owner": 5}"#, "the request's \"owner\" is not a string"),
            (#"{"op": "get", "directory": \#(quoted)}"#, "the request names no entry"),
            (#"{"op": "rm", "directory": \#(quoted), "names": ["api", 1]}"#, "the request's entry names are malformed"),
            (#"{"op": "frobnicate"}"#, "the agent does not know this request"),
            (#"{"op": 7}"#, "the agent does not know this request"),
            (#"["op", "status"]"#, "the agent does not know this request"),
        ]
        for (request, message) in malformed {
            let answer = try ask(request)
            #expect(answer["ok"] as? Bool == false, "\(request)")
            #expect(answer["code"] as? String == "invalidInput", "\(request)")
            #expect(answer["message"] as? String == message, "\(request)")
        }
        let status = try ask(#"{"op": "status"}"#)
        #expect(status["ok"] as? Bool == true, "the same connection serves on")
        let got = try world.vault(["get", "api"])
        #expect(got.stdoutText == Self.secret, "the entry is untouched: \(got.stderrText)")
    }

    @Test(.enabled(if: geteuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/python3")))
    func anotherUserIsRefused() throws {
        let world = try World()
        try world.unlock()
        // Open the way (folder 0711, socket 0666) so only the agent's own check stands.
        chmod(world.sandbox.root, 0o711)
        chmod((world.socket as NSString).deletingLastPathComponent, 0o711)
        chmod(world.socket, 0o666)
        let script = """
            import socket, struct, json, sys
            s = socket.socket(socket.AF_UNIX); s.settimeout(5); s.connect(sys.argv[1])
            body = json.dumps({"op": "status"}).encode()
            try:
                s.sendall(struct.pack(">I", len(body)) + body)
                data = s.recv(100)
            except (ConnectionResetError, BrokenPipeError):
                data = b""
            sys.exit(0 if data == b"" else 3)
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        process.arguments = ["--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c", script, world.socket]
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "the connection was closed without an answer")
        #expect(try world.vault(["get", "api"]).stdoutText == Self.secret)
        let log = world.stop()
        #expect(log.stderrText.contains("refused a connection from another user"))
    }

    @Test func shStartsABackgroundAgentAndPrintsWhereItIs() throws {
        let sandbox = try CLISandbox()
        defer { sandbox.cleanUp() }
        let temporary = sandbox.path("tmp")
        try FileManager.default.createDirectory(atPath: temporary, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        // Neither VAULT_AGENT_SOCK nor XDG_RUNTIME_DIR: as ssh-agent, a private folder under $TMPDIR.
        let started = try sandbox.run(["agent", "--sh", "--idle-timeout", "5m"], environment: ["TMPDIR": temporary, "XDG_RUNTIME_DIR": ""])
        #expect(started.status == 0, "\(started.stderrText)")
        let lines = started.stdoutText
        let socket = try #require(lines.firstMatch(of: /VAULT_AGENT_SOCK='([^']+)'/)?.1).description
        let pid = try #require(lines.firstMatch(of: /VAULT_AGENT_PID=([0-9]+);/)?.1).description
        defer { if let pid = pid_t(pid) { kill(pid, SIGTERM) } }
        #expect(socket.hasPrefix(temporary + "/vault-agent-"))
        #expect(lines.contains("export VAULT_AGENT_SOCK;"))
        let status = try sandbox.run(["agent", "--status", "--json"], environment: ["VAULT_AGENT_SOCK": socket])
        #expect(status.status == 0)
        let json = try #require(try JSONSerialization.jsonObject(with: status.stdout) as? [String: Any])
        #expect(json["pid"] as? Int == Int(pid))
        // A second --sh finds the running agent instead of starting another.
        let again = try sandbox.run(["agent", "--sh"], environment: ["VAULT_AGENT_SOCK": socket])
        #expect(again.stdoutText.contains("VAULT_AGENT_PID=\(pid);"))
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-socket-activate")))
    func socketActivationHandsTheAgentItsListeningSocket() throws {
        let sandbox = try CLISandbox()
        defer { sandbox.cleanUp() }
        let folder = sandbox.path("agent")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        let socket = folder + "/agent.sock"
        // Started detached with every inherited descriptor closed (python's close_fds): a long-lived
        // grandchild holding the test harness's descriptors would hold the harness.
        let launcher = """
            import subprocess, sys
            p = subprocess.Popen(["/usr/bin/systemd-socket-activate", "-l", sys.argv[1], "-E", "VAULT_AGENT_SOCK=" + sys.argv[1],
                                  sys.argv[2], "agent"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL, close_fds=True, start_new_session=True)
            print(p.pid)
            """
        let launched = try ExternalProcess.run("/usr/bin/python3", ["-c", launcher, socket, try CLIBinary.path()],
                                               environment: sandbox.environment, stdin: Data(), timeout: 30)
        let pid = try #require(Int32(launched.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)))
        // SIGKILL: the launcher inherits the test process's blocked SIGTERM, so SIGTERM would never
        // arrive and the agent (or systemd-socket-activate still waiting) would outlive the test.
        defer { kill(pid, SIGKILL) }
        let deadline = Date().addingTimeInterval(20)
        while !FileManager.default.fileExists(atPath: socket), Date() < deadline { usleep(10_000) }
        let status = try sandbox.run(["agent", "--status", "--json"], environment: ["VAULT_AGENT_SOCK": socket])
        #expect(status.status == 0, "\(status.stderrText)")
        let json = try #require(try JSONSerialization.jsonObject(with: status.stdout) as? [String: Any])
        #expect(json["pid"] as? Int == Int(pid), "systemd-socket-activate exec'd the agent with the socket")
    }

    /// The key bytes are in the agent's memory while it holds the vault (the control), and nowhere in
    /// it once `vault lock` or the idle timeout made it forget them (read as root through /proc/PID/mem).
    @Test(.enabled(if: geteuid() == 0)) func theKeyIsGoneFromTheAgentsMemoryOnceForgotten() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let folder = sandbox.path("agent")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        let environment = ["VAULT_AGENT_SOCK": folder + "/agent.sock"]
        let agent = try sandbox.start(["agent", "--idle-timeout", "2s"], environment: environment)
        defer { kill(agent.pid, SIGTERM); _ = agent.finish(timeout: 20) }
        let deadline = Date().addingTimeInterval(20)
        while !FileManager.default.fileExists(atPath: folder + "/agent.sock"), Date() < deadline { usleep(10_000) }
        let keyFile = try #require(key["VAULT_KEY_FILE"])
        func copiesOfTheKey() throws -> Int {
            try ProcessMemoryScan.copies(ofContentsOf: keyFile, in: agent.pid, environment: sandbox.environment)
        }
        #expect(try copiesOfTheKey() == 0)
        #expect(try sandbox.run(["unlock"], environment: environment.merging(key) { _, new in new }).status == 0)
        #expect(try copiesOfTheKey() > 0, "the control: the scan finds the key while the agent holds it")
        let status = try sandbox.run(["agent", "--status", "--json"], environment: environment)
        #expect((try JSONSerialization.jsonObject(with: status.stdout) as? [String: Any])?["failedMemoryLocks"] == nil,
                "the contract's fields only")
        #expect(try sandbox.run(["lock"], environment: environment).status == 0)
        #expect(try copiesOfTheKey() == 0, "lock zeroised it")
        #expect(try sandbox.run(["unlock"], environment: environment.merging(key) { _, new in new }).status == 0)
        // The 2 s idle timeout makes it forget: polled (bounded), as a loaded machine runs the agent's timer late.
        var left = try copiesOfTheKey()
        let idleDeadline = Date().addingTimeInterval(60)
        while left > 0, Date() < idleDeadline {
            usleep(250_000)
            left = try copiesOfTheKey()
        }
        #expect(left == 0, "the idle timeout zeroised it")
        let locked = try String(contentsOfFile: "/proc/\(agent.pid)/status", encoding: .utf8)
        #expect(locked.contains("VmLck:"), "the agent locks its key memory")
    }

    @Test func aLockedMemoryLimitTooLowStopsTheAgentWithAClearError() throws {
        let sandbox = try CLISandbox()
        defer { sandbox.cleanUp() }
        let folder = sandbox.path("agent")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        let result = try ExternalProcess.run("/bin/sh", ["-c", "ulimit -l 64 && exec '\(try CLIBinary.path())' agent"],
                                             environment: sandbox.environment.merging(["VAULT_AGENT_SOCK": folder + "/agent.sock"]) { _, new in new },
                                             stdin: Data(), timeout: 30)
        #expect(result.status == 64)
        #expect(result.stderrText.contains("RLIMIT_MEMLOCK"))
        #expect(!FileManager.default.fileExists(atPath: folder + "/agent.sock"))
    }

    /// A raw connection to the agent.
    static func connect(_ path: String) throws -> Int32 {
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in path.utf8.enumerated() where index < raw.count - 1 { raw[index] = byte }
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else {
            close(descriptor)
            throw CLITestFailure("connect failed: \(errno)")
        }
        return descriptor
    }
}

extension AgentCommandTests {
    /// Wall-clock bounds: run by scripts/test in a process of their own, one at a time (TimingTests).
    @Suite(.timing, .serialized) struct Timed {
        @Test func aKilledAgentFailsFastAndAKeySourceStillWorks() throws {
            let world = try World()
            try world.unlock()
            kill(world.agent.pid, SIGKILL)
            _ = world.agent.finish(timeout: 20)
            let started = Date()
            let failed = try world.vault(["get", "api"])
            #expect(Date().timeIntervalSince(started) < 5)
            #expect(failed.status != 0)
            #expect(failed.stderrText.contains("agent"))
            let fallback = try world.vault(["get", "api"], environment: ["VAULT_PASSPHRASE": AgentCommandTests.passphrase])
            #expect(fallback.status == 0)
            #expect(fallback.stdoutText == AgentCommandTests.secret)
        }
    }
}
