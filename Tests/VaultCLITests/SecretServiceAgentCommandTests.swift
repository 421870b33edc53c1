#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
import TestScheduling

/// `vault agent --secret-service` as the command line sees it (issue 37): handed to
/// `vault-secret-service` before anything is read (exit 66 without it), its options checked, the
/// provider started once the socket is bound and stopped before the keys are forgotten, a start
/// that fails stopping the agent with its error, and the status naming what it serves.
@Suite(.blockingWork, .serialized) struct SecretServiceAgentCommandTests {
    /// A sandbox with a vault, a private agent socket folder and a private session bus.
    final class World {
        let sandbox: CLISandbox
        let key: [String: String]
        let bus: PrivateSessionBus

        init?() throws {
            (sandbox, key) = try CLISandbox.withVault()
            guard let bus = try PrivateSessionBus(in: sandbox.root) else {
                sandbox.cleanUp()
                return nil
            }
            self.bus = bus
            for folder in ["agent", "other"] {
                try FileManager.default.createDirectory(atPath: sandbox.path(folder), withIntermediateDirectories: false,
                                                        attributes: [.posixPermissions: 0o700])
            }
        }

        /// The environment of a command on this bus talking to the agent at `socket`.
        func environment(socket: String = "agent/agent.sock") -> [String: String] {
            key.merging(["DBUS_SESSION_BUS_ADDRESS": bus.address, "VAULT_AGENT_SOCK": sandbox.path(socket)]) { _, new in new }
        }

        /// The agent's `--status --json`, parsed.
        func status(socket: String = "agent/agent.sock") throws -> [String: Any]? {
            let result = try sandbox.run(["agent", "--status", "--json"], environment: environment(socket: socket))
            guard result.status == 0 else { return nil }
            return try JSONSerialization.jsonObject(with: result.stdout, options: [.fragmentsAllowed]) as? [String: Any]
        }

        /// Waits until the agent at `socket` answers and serves the Secret Service.
        func waitUntilServing(socket: String = "agent/agent.sock") throws -> [String: Any]? {
            let deadline = Date().addingTimeInterval(30)
            while Date() < deadline {
                if let status = try status(socket: socket), status["secretService"] is [String: Any] { return status }
                usleep(50_000)
            }
            return nil
        }

        deinit {
            bus.stop()
            sandbox.cleanUp()
        }
    }

    @Test func withoutTheHelperTheSecretServiceAgentSaysWhatIsMissing() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let alone = try HelperExecutableTests.vaultAlone(in: sandbox)
        try FileManager.default.createDirectory(atPath: sandbox.path("agent"), withIntermediateDirectories: false,
                                                attributes: [.posixPermissions: 0o700])
        let environment = key.merging(["VAULT_AGENT_SOCK": sandbox.path("agent/agent.sock")]) { _, new in new }
        for arguments in [["agent", "--secret-service"], ["agent", "--sh", "--secret-service"], ["agent", "--secret-service", "--replace"]] {
            let result = try sandbox.runBinary(alone, arguments, environment: environment)
            #expect(result.status == 66, "\(arguments): \(result.stderrText)")
            #expect(result.stderrText.contains("serving the Secret Service on D-Bus needs vault-secret-service, which is not installed beside this vault"),
                    "\(result.stderrText)")
            #expect(result.stdout.isEmpty)
        }
        // Handed over before the agent did anything: no socket was bound.
        #expect(!FileManager.default.fileExists(atPath: sandbox.path("agent/agent.sock")))
        // The plain agent does not need it.
        let plain = try RunningCLI(["agent"], environment: sandbox.environment.merging(environment) { _, new in new }, executable: alone)
        // Answering means serving: its signal handlers are in place before SIGTERM.
        let deadline = Date().addingTimeInterval(20)
        var answered = false
        while !answered, Date() < deadline {
            answered = try sandbox.runBinary(alone, ["agent", "--status"], environment: environment).status == 0
            if !answered { usleep(20_000) }
        }
        #expect(answered)
        kill(plain.pid, SIGTERM)
        #expect(plain.finish(timeout: 20).status == 0)
    }

    @Test func theSecretServiceOptionsAreCheckedBeforeAnyHandOver() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let alone = try HelperExecutableTests.vaultAlone(in: sandbox)
        let cases: [([String], String)] = [
            (["agent", "--replace"], "--replace goes with --secret-service"),
            (["agent", "--vault", sandbox.vaultDirectory], "--vault goes with --secret-service"),
            (["agent", "--status", "--secret-service"], "--status only asks the running one"),
        ]
        for (arguments, message) in cases {
            let result = try sandbox.runBinary(alone, arguments, environment: key)
            #expect(result.status == 64, "\(arguments): \(result.stderrText)")
            #expect(result.stderrText.contains(message), "\(result.stderrText)")
        }
    }

    @Test func bashCompletesTheSecretServiceOptions() throws {
        let sandbox = try CLISandbox()
        defer { sandbox.cleanUp() }
        let script = try sandbox.run(["--generate-completion-script", "bash"])
        try script.stdout.write(to: URL(fileURLWithPath: sandbox.path("completion.bash")))
        guard ExternalProcess.required("bash") != nil else { return }
        let offered = try ExternalProcess.run(CompletionTests.driver, ["bash", sandbox.path("completion.bash"), "vault agent --"],
                                              environment: sandbox.environment)
        #expect(offered.status == 0, "\(offered.stderrText)")
        let options = Set(offered.stdoutText.split(separator: "\n").map(String.init))
        #expect(options.isSuperset(of: ["--secret-service", "--replace", "--vault", "--sh", "--status"]), "\(options)")
    }

    @Test func vaultLinksNoBusLibraryAndItsHelperDoes() throws {
        let vault = try CLIBinary.path()
        let modules = try HelperExecutableTests.linkedModules(vault)
        #expect(modules.contains("VaultCLI"))
        #expect(!modules.contains("VaultSecretService"), "vault links the Secret Service provider")
        let libraries = try ExternalProcess.run("/usr/bin/ldd", [vault], environment: [:])
        #expect(!libraries.stdoutText.contains("libsystemd"), "vault links libsystemd")
        let helper = URL(fileURLWithPath: vault).deletingLastPathComponent().appendingPathComponent("vault-secret-service").path
        #expect(try HelperExecutableTests.linkedModules(helper).isSuperset(of: ["VaultSecretService", "VaultCLI"]))
        #expect(try ExternalProcess.run("/usr/bin/ldd", [helper], environment: [:]).stdoutText.contains("libsystemd.so.0"))
    }

    @Test func theAgentServesTheVaultOnTheBusAndSaysSoInItsStatus() throws {
        guard let world = try World() else { return }
        let sandbox = world.sandbox
        let agent = try sandbox.start(["agent", "--secret-service", "--vault", sandbox.vaultDirectory], environment: world.environment())
        let status = try #require(try world.waitUntilServing())
        let served = try #require(status["secretService"] as? [String: Any])
        #expect(served["busName"] as? String == "org.freedesktop.secrets")
        let canonical = try #require(URL(fileURLWithPath: sandbox.vaultDirectory).resolvingSymlinksInPath().path as String?)
        #expect(served["collection"] as? String == canonical)
        #expect(status["pid"] as? Int == Int(agent.pid))
        #expect(status["vaults"] is [Any], "the existing fields stay")
        let text = try sandbox.run(["agent", "--status"], environment: world.environment())
        #expect(text.stdoutText.contains("Secret Service: org.freedesktop.secrets"), "\(text.stdoutText)")

        // A second agent (on its own socket) finds the name owned: it stops, with a clear error, its socket removed.
        let second = try sandbox.run(["agent", "--secret-service"], environment: world.environment(socket: "other/agent.sock"), timeout: 60)
        #expect(second.status == 73, "\(second.stderrText)")
        #expect(second.stderrText.contains("org.freedesktop.secrets"), "\(second.stderrText)")
        #expect(!FileManager.default.fileExists(atPath: sandbox.path("other/agent.sock")))
        #expect(try world.status() != nil, "the first agent still answers")

        // A plain agent's status says it serves none.
        let plain = try sandbox.start(["agent"], environment: world.environment(socket: "other/agent.sock"))
        let deadline = Date().addingTimeInterval(20)
        var plainStatus: [String: Any]?
        while plainStatus == nil, Date() < deadline {
            plainStatus = try world.status(socket: "other/agent.sock")
            if plainStatus == nil { usleep(20_000) }
        }
        #expect(plainStatus?["secretService"] is NSNull, "\(String(describing: plainStatus))")
        // --sh --secret-service does not pass that agent off as serving the Secret Service.
        let reused = try sandbox.run(["agent", "--sh", "--secret-service"], environment: world.environment(socket: "other/agent.sock"))
        #expect(reused.status == 73, "\(reused.stderrText)")
        #expect(reused.stderrText.contains("without the Secret Service"), "\(reused.stderrText)")
        #expect(reused.stdout.isEmpty)
        kill(plain.pid, SIGTERM)
        _ = plain.finish(timeout: 20)

        kill(agent.pid, SIGTERM)
        let log = agent.finish(timeout: 20)
        #expect(log.status == 0, "\(log.stderrText)")
        let released = try #require(log.stderrText.range(of: "released org.freedesktop.secrets"), "\(log.stderrText)")
        let stopped = try #require(log.stderrText.range(of: "stopped; every key forgotten"))
        #expect(released.lowerBound < stopped.lowerBound, "the bus side stops before the keys are forgotten")
        #expect(!FileManager.default.fileExists(atPath: sandbox.path("agent/agent.sock")))
    }

    @Test func withoutASessionBusTheAgentDoesNotStart() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        try FileManager.default.createDirectory(atPath: sandbox.path("agent"), withIntermediateDirectories: false,
                                                attributes: [.posixPermissions: 0o700])
        let environment = key.merging(["VAULT_AGENT_SOCK": sandbox.path("agent/agent.sock"),
                                       "DBUS_SESSION_BUS_ADDRESS": "unix:path=" + sandbox.path("no-bus")]) { _, new in new }
        let result = try sandbox.run(["agent", "--secret-service"], environment: environment, timeout: 60)
        #expect(result.status == 69, "\(result.stderrText)")
        #expect(!result.stderrText.contains("not installed"))
        #expect(result.stderrText.contains("cannot connect to the session bus"), "\(result.stderrText)")
        #expect(!result.stderrText.contains("no agent answers"), "the bus is missing, not the agent")
        #expect(!FileManager.default.fileExists(atPath: sandbox.path("agent/agent.sock")), "the socket is closed and removed")
        // In the background (--sh), the failed start is reported instead of shell lines.
        let background = try sandbox.run(["agent", "--sh", "--secret-service"], environment: environment, timeout: 60)
        #expect(background.status == 69, "\(background.stderrText)")
        #expect(background.stderrText.contains("the agent stopped as it started (exit 69)"), "\(background.stderrText)")
        #expect(background.stdout.isEmpty)
    }

    @Test func theBackgroundAgentGetsTheSecretServiceOptions() throws {
        guard let world = try World() else { return }
        let sandbox = world.sandbox
        let started = try sandbox.run(["agent", "--sh", "--secret-service", "--vault", sandbox.vaultDirectory], environment: world.environment(),
                                      timeout: 60)
        #expect(started.status == 0, "\(started.stderrText)")
        #expect(started.stdoutText.contains("VAULT_AGENT_SOCK="))
        // Printed only once the name is owned: the status already says so.
        let status = try #require(try world.status())
        let served = try #require(status["secretService"] as? [String: Any], "\(status)")
        #expect(served["busName"] as? String == "org.freedesktop.secrets")
        let pid = try #require(status["pid"] as? Int)
        // Asked again, the running agent is reused.
        let again = try sandbox.run(["agent", "--sh", "--secret-service"], environment: world.environment(), timeout: 60)
        #expect(again.status == 0, "\(again.stderrText)")
        #expect(again.stdoutText.contains("Agent already running, pid \(pid)"), "\(again.stdoutText)")
        #expect(kill(Int32(pid), SIGTERM) == 0)
        let deadline = Date().addingTimeInterval(20)
        while kill(Int32(pid), 0) == 0, Date() < deadline { usleep(20_000) }
        #expect(kill(Int32(pid), 0) != 0, "the background agent stopped")
    }
}
