#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Testing
import TestScheduling

/// `vault exec`: secrets in the child's environment only, exit status passed through, signals forwarded.
@Suite(.blockingWork) struct ExecCommandTests {
    static let secret = "exec-secret-\(UUID().uuidString)"

    static func vaultWithSecret() throws -> (CLISandbox, [String: String]) {
        let (sandbox, key) = try CLISandbox.withVault()
        let add = try sandbox.run(["add", "api"], stdin: Data(text: secret), environment: key)
        guard add.status == 0 else { throw CLITestFailure("add failed: \(add.stderrText)") }
        return (sandbox, key)
    }

    @Test func theSecretIsInTheChildsEnvironmentAndInNoArgv() throws {
        let (sandbox, key) = try Self.vaultWithSecret()
        defer { sandbox.cleanUp() }
        let environFile = sandbox.path("environ"), cmdlineFile = sandbox.path("cmdline"), parentFile = sandbox.path("parent-cmdline")
        let script = "cat /proc/$$/environ > '\(environFile)'; cat /proc/$$/cmdline > '\(cmdlineFile)'; "
            + "cat /proc/$PPID/cmdline > '\(parentFile)'; printf '%s' \"$API_TOKEN\""
        let result = try sandbox.run(["exec", "--env", "API_TOKEN=api", "--", "sh", "-c", script], environment: key)
        #expect(result.status == 0, "\(result.stderrText)")
        #expect(result.stdoutText == Self.secret)
        let environ = try Data(contentsOf: URL(fileURLWithPath: environFile))
        #expect(environ.contains(Data(text: "API_TOKEN=\(Self.secret)\0")))
        #expect(environ.contains(Data(text: "VAULT_DIR=")), "the rest of the environment is inherited")
        #expect(!(try Data(contentsOf: URL(fileURLWithPath: cmdlineFile))).contains(Data(text: Self.secret)))
        let parent = try Data(contentsOf: URL(fileURLWithPath: parentFile))
        #expect(parent.contains(Data(text: "exec\0")), "the parent is vault exec")
        #expect(!parent.contains(Data(text: Self.secret)))
        #expect(!result.stderr.contains(Data(text: Self.secret)))
    }

    @Test func aVariableOfTheSameNameIsReplaced() throws {
        let (sandbox, key) = try Self.vaultWithSecret()
        defer { sandbox.cleanUp() }
        let result = try sandbox.run(["exec", "--env", "API_TOKEN=api", "--", "sh", "-c", "printf '%s' \"$API_TOKEN\""],
                                     environment: key.merging(["API_TOKEN": "old"]) { _, new in new })
        #expect(result.stdoutText == Self.secret)
    }

    @Test func theExitStatusIsPassedThrough() throws {
        let (sandbox, key) = try Self.vaultWithSecret()
        defer { sandbox.cleanUp() }
        for status in [0, 1, 7, 255] {
            let result = try sandbox.run(["exec", "--env", "T=api", "--", "sh", "-c", "exit \(status)"], environment: key)
            #expect(result.status == Int32(status))
        }
        let missing = try sandbox.run(["exec", "--env", "T=api", "--", "no-such-command-\(UUID().uuidString)"], environment: key)
        #expect(missing.status == 127)
        #expect(missing.stderrText.contains("cannot run"))
    }

    @Test(arguments: [(SIGTERM, "TERM"), (SIGINT, "INT")])
    func signalsAreForwardedToTheCommand(signal: Int32, name: String) throws {
        let (sandbox, key) = try Self.vaultWithSecret()
        defer { sandbox.cleanUp() }
        // The signal goes only once the command is running with its trap set (it writes `ready`
        // after the trap), which also means vault has its forwarders installed (before the spawn).
        // A signal that lands between the spawn and vault learning the child's PID is kept and
        // forwarded then (ChildProcess), so no moment after `ready` can lose it.
        let ready = sandbox.path("ready")
        let script = "trap 'echo got-\(name); exit 42' \(name); : > '\(ready)'; i=0; "
            + "while [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done; exit 3"
        let running = try sandbox.start(["exec", "--env", "T=api", "--", "sh", "-c", script], environment: key)
        let deadline = Date().addingTimeInterval(20)
        while !FileManager.default.fileExists(atPath: ready), Date() < deadline { usleep(10_000) }
        #expect(FileManager.default.fileExists(atPath: ready), "the command started")
        kill(running.pid, signal)
        let result = running.finish(timeout: 20)
        #expect(result.status == 42, "the command's trap ran and its status came back")
        #expect(result.stdoutText == "got-\(name)\n")
    }

    @Test func aCommandKilledByASignalEndsVaultTheSameWay() throws {
        let (sandbox, key) = try Self.vaultWithSecret()
        defer { sandbox.cleanUp() }
        let result = try sandbox.run(["exec", "--env", "T=api", "--", "sh", "-c", "kill -TERM $$"], environment: key)
        #expect(result.status == 128 + SIGTERM)
    }

    @Test func badUseFailsBeforeAnythingRuns() throws {
        let (sandbox, key) = try Self.vaultWithSecret()
        defer { sandbox.cleanUp() }
        let marker = sandbox.path("ran")
        let command = ["--", "sh", "-c", ": > '\(marker)'"]
        let missingEntry = try sandbox.run(["exec", "--env", "T=nope"] + command, environment: key)
        #expect(missingEntry.status == 66)
        let badName = try sandbox.run(["exec", "--env", "1T=api"] + command, environment: key)
        #expect(badName.status == 64)
        let noMapping = try sandbox.run(["exec"] + command, environment: key)
        #expect(noMapping.status == 64)
        let noCommand = try sandbox.run(["exec", "--env", "T=api"], environment: key)
        #expect(noCommand.status == 64)
        let noKey = try sandbox.run(["exec", "--env", "T=api"] + command)
        #expect(noKey.status == 64)
        #expect(!FileManager.default.fileExists(atPath: marker))
    }

    /// While the command runs, the waiting vault holds no copy of a secret it put in the command's
    /// environment (`--env`, `--env-file`), as with `--file`; with `--mask` it keeps them (the
    /// control: the scan finds them). Read as root through /proc/PID/mem.
    @Test(.enabled(if: geteuid() == 0), arguments: ["--env", "--env-file", "--file", "--mask"])
    func theWaitingVaultKeepsNoCopyOfTheSecrets(mode: String) throws {
        let (sandbox, key) = try Self.vaultWithSecret()
        defer { sandbox.cleanUp() }
        let needle = sandbox.privateFile("needle", Self.secret)
        let runtime = sandbox.path("runtime")
        try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        let ready = sandbox.path("ready")
        let sources: [String] = switch mode {
        case "--env-file": ["--env-file", sandbox.privateFile("app.env", "API_TOKEN=vault://api\nOTHER=plain\n")]
        case "--file": ["--file", "API_TOKEN=api"]
        case "--mask": ["--env", "API_TOKEN=api", "--mask"]
        default: ["--env", "API_TOKEN=api"]
        }
        let running = try sandbox.start(["exec"] + sources + ["--", "sh", "-c", ": > '\(ready)'; exec sleep 60"],
                                        environment: key.merging(["XDG_RUNTIME_DIR": runtime]) { _, new in new })
        defer { kill(running.pid, SIGTERM); _ = running.finish(timeout: 20) }
        let deadline = Date().addingTimeInterval(20)
        while !FileManager.default.fileExists(atPath: ready), Date() < deadline { usleep(10_000) }
        #expect(FileManager.default.fileExists(atPath: ready), "the command started")
        let copies = try ProcessMemoryScan.copies(ofContentsOf: needle, in: running.pid, environment: sandbox.environment)
        if mode == "--mask" {
            #expect(copies > 0, "the control: --mask keeps the secret to mask it, and the scan finds it")
        } else {
            #expect(copies == 0, "\(mode): the waiting vault still holds \(copies) cop\(copies == 1 ? "y" : "ies") of the secret")
        }
    }
}
