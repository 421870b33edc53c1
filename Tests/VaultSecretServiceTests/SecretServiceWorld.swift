#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
import TestScheduling

/// What a program printed and how it ended.
struct ProgramResult {
    let status: Int32
    let stdout: Data
    let stderr: Data
    var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
    var stderrText: String { String(decoding: stderr, as: UTF8.self) }
}

struct SecretServiceTestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// One test's world: a private folder, a private session bus (Debian's dbus-daemon, stopped by
/// its PID), a passphrase vault made by the built `vault`, and the built `vault-secret-service`
/// running `agent --secret-service --vault DIR` on that bus. Clients run with only this world's
/// environment (DBUS_SESSION_BUS_ADDRESS, HOME, VAULT_AGENT_SOCK).
final class SecretServiceWorld {
    static let passphrase = "correct horse battery staple"

    let root: String
    let busAddress: String
    private let bus = Process()
    private(set) var agents: [Process] = []
    let vaultDirectory: String
    let socket: String

    /// The environment of a client (secret-tool, python3, `vault`), without the developer's own.
    var environment: [String: String] {
        ["PATH": "/usr/bin:/bin", "HOME": root, "DBUS_SESSION_BUS_ADDRESS": busAddress, "VAULT_DIR": vaultDirectory,
         "VAULT_AGENT_SOCK": socket, "XDG_CONFIG_HOME": root + "/config", "LANG": "C.UTF-8"]
    }

    /// The folder of a bus that every user may connect to (`everyUsersBus`), removed with the world.
    private let sharedFolder: String?

    /// The world, with the agent started (`agentArguments` added, `agentEnvironment` merged) unless `startAgent` is false.
    /// - Parameter everyUsersBus: a bus whose policy lets any uid connect (its socket in a folder of
    ///   mode 0755), to see the provider itself refuse another user.
    init(agentArguments: [String] = [], agentEnvironment: [String: String] = [:], startAgent: Bool = true,
         everyUsersBus: Bool = false) throws {
        root = NSTemporaryDirectory() + "vault-ss-test-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try FileManager.default.createDirectory(atPath: root + "/config", withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        vaultDirectory = root + "/vault"
        socket = root + "/agent.sock"
        bus.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-daemon")
        if everyUsersBus {
            let shared = root + "-bus"
            try FileManager.default.createDirectory(atPath: shared, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
            sharedFolder = shared
            busAddress = "unix:path=\(shared)/bus"
            let configuration = """
                <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
                 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
                <busconfig>
                  <type>session</type>
                  <listen>\(busAddress)</listen>
                  <auth>EXTERNAL</auth>
                  <policy context="default"><allow user="*"/><allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/><allow own="*"/></policy>
                </busconfig>
                """
            FileManager.default.createFile(atPath: shared + "/bus.conf", contents: Data(configuration.utf8), attributes: [.posixPermissions: 0o644])
            bus.arguments = ["--config-file=" + shared + "/bus.conf", "--nofork", "--nopidfile"]
        } else {
            sharedFolder = nil
            busAddress = "unix:path=\(root)/bus"
            bus.arguments = ["--session", "--nofork", "--nopidfile", "--address=" + busAddress]
        }
        bus.standardInput = FileHandle.nullDevice
        bus.standardOutput = FileHandle.nullDevice
        bus.standardError = FileHandle.nullDevice
        try bus.run()
        BlockingWait.check("waiting for dbus-daemon")
        let socketPath = String(busAddress.dropFirst("unix:path=".count))
        try Self.wait("dbus-daemon listening") { FileManager.default.fileExists(atPath: socketPath) }
        if everyUsersBus { chmod(socketPath, 0o777) }
        let made = try vault(["init", "--no-agent"], environment: ["VAULT_PASSPHRASE": Self.passphrase])
        guard made.status == 0 else { throw SecretServiceTestFailure("vault init: \(made.stderrText)") }
        if startAgent { _ = try startProvider(agentArguments, environment: agentEnvironment, socket: socket) }
    }

    deinit {
        for agent in agents where agent.isRunning {
            kill(agent.processIdentifier, SIGKILL)
            agent.waitUntilExit()
        }
        if bus.isRunning {
            // SIGKILL: dbus-daemon inherits the test process's blocked SIGTERM and SIGINT, so those never arrive.
            kill(bus.processIdentifier, SIGKILL)
            bus.waitUntilExit()
        }
        try? FileManager.default.removeItem(atPath: root)
        if let sharedFolder { try? FileManager.default.removeItem(atPath: sharedFolder) }
    }

    // MARK: Programs

    /// Whether Debian's dbus-daemon, secret-tool, setpriv and python3 with secretstorage are
    /// installed; when not, the test returns early on a developer machine and fails under CI=true
    /// (.ci/run installs them).
    static func clientsInstalled(sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
        let needed = ["/usr/bin/dbus-daemon", "/usr/bin/secret-tool", "/usr/bin/setpriv", "/usr/bin/python3",
                      "/usr/lib/python3/dist-packages/secretstorage", "/usr/lib/python3/dist-packages/jeepney"]
        let missing = needed.filter { !FileManager.default.fileExists(atPath: $0) }
        guard missing.isEmpty else {
            if ProcessInfo.processInfo.environment["CI"] == "true" {
                Issue.record("not installed: \(missing.joined(separator: ", ")); CI must install them (.ci/run)", sourceLocation: sourceLocation)
            }
            return false
        }
        return true
    }

    /// The folder of the built products (beside the test bundle).
    static func builtProduct(_ name: String) throws -> String {
        var candidates: [URL] = []
        if let executable = Bundle.main.executableURL { candidates.append(executable.deletingLastPathComponent()) }
        candidates.append(Bundle.main.bundleURL)
        candidates.append(Bundle.main.bundleURL.deletingLastPathComponent())
        for directory in candidates {
            let candidate = directory.appendingPathComponent(name).path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        throw SecretServiceTestFailure("cannot find the built \(name) near \(candidates.map(\.path))")
    }

    /// Starts `vault-secret-service agent --secret-service --vault DIR arguments`; its standard error goes to a log file.
    /// - Returns: the log file's path.
    @discardableResult
    func startProvider(_ arguments: [String], environment extra: [String: String] = [:], socket: String,
                       waitForName: Bool = true) throws -> String {
        let log = root + "/agent-\(agents.count).log"
        FileManager.default.createFile(atPath: log, contents: nil)
        let agent = Process()
        agent.executableURL = URL(fileURLWithPath: try Self.builtProduct("vault-secret-service"))
        agent.arguments = ["agent", "--secret-service", "--vault", vaultDirectory] + arguments
        agent.environment = environment.merging(["VAULT_AGENT_SOCK": socket]) { _, new in new }.merging(extra) { _, new in new }
        agent.standardInput = FileHandle.nullDevice
        agent.standardOutput = FileHandle.nullDevice
        agent.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        try agent.run()
        agents.append(agent)
        if waitForName {
            try Self.wait("the provider owning org.freedesktop.secrets") {
                (try? String(contentsOfFile: log, encoding: .utf8))?.contains("listening on") == true || !agent.isRunning
            }
        }
        return log
    }

    /// The last agent started.
    var agent: Process? { agents.last }

    /// Runs `vault arguments` (the built one) with this world's environment.
    func vault(_ arguments: [String], stdin: Data = Data(), environment extra: [String: String] = [:]) throws -> ProgramResult {
        try run(try Self.builtProduct("vault"), arguments, stdin: stdin, environment: extra)
    }

    /// Runs `secret-tool arguments`.
    func secretTool(_ arguments: [String], stdin: Data = Data()) throws -> ProgramResult {
        try run("/usr/bin/secret-tool", arguments, stdin: stdin)
    }

    /// Runs `/usr/bin/python3 -c script`.
    func python(_ script: String) throws -> ProgramResult {
        try run("/usr/bin/python3", ["-c", script])
    }

    /// Runs a program with this world's environment (plus `extra`), waiting at most `timeout` seconds.
    func run(_ executable: String, _ arguments: [String], stdin: Data = Data(), environment extra: [String: String] = [:],
             timeout: Double = 60, sourceLocation: SourceLocation = #_sourceLocation) throws -> ProgramResult {
        BlockingWait.check("waiting for \(executable)", sourceLocation: sourceLocation)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = environment.merging(extra) { _, new in new }
        let input = Pipe(), output = Pipe(), errors = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
        _ = signal(SIGPIPE, SIG_IGN)
        try process.run()
        let group = DispatchGroup()
        nonisolated(unsafe) var stdout = Data()
        nonisolated(unsafe) var stderr = Data()
        let outputHandle = output.fileHandleForReading, errorHandle = errors.fileHandleForReading
        DispatchQueue.global().async(group: group) { stdout = outputHandle.readDataToEndOfFile() }
        DispatchQueue.global().async(group: group) { stderr = errorHandle.readDataToEndOfFile() }
        try? output.fileHandleForWriting.close()
        try? errors.fileHandleForWriting.close()
        try? input.fileHandleForReading.close()
        try? input.fileHandleForWriting.write(contentsOf: stdin)
        try? input.fileHandleForWriting.close()
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning, Date() < deadline { usleep(2_000) }
        if process.isRunning {
            Issue.record("\(executable) still running after \(timeout) s; killed", sourceLocation: sourceLocation)
            kill(process.processIdentifier, SIGKILL)
        }
        process.waitUntilExit()
        group.wait()
        return ProgramResult(status: process.terminationStatus, stdout: stdout, stderr: stderr)
    }

    /// `vault unlock` with the passphrase.
    func unlock(socket: String? = nil) throws {
        let result = try vault(["unlock"], environment: ["VAULT_PASSPHRASE": Self.passphrase, "VAULT_AGENT_SOCK": socket ?? self.socket])
        guard result.status == 0 else { throw SecretServiceTestFailure("vault unlock: \(result.stderrText)") }
    }

    /// Writes an executable script in the world's folder and returns its path.
    func script(_ name: String, _ text: String) -> String {
        let path = root + "/" + name
        FileManager.default.createFile(atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o755])
        return path
    }

    /// A pinentry stand-in that answers the vault's passphrase, or cancels while `cancelFlag` exists.
    func pinentry() -> (program: String, cancelFlag: String) {
        let flag = root + "/cancel-pinentry"
        let program = script("pinentry", """
            #!/usr/bin/python3
            import os, sys
            cancel = os.path.exists(\(String(reflecting: flag)))
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
            """)
        return (program, flag)
    }

    /// Waits (bounded, 20 s) until `condition` holds.
    static func wait(_ what: String, _ condition: () -> Bool) throws {
        let deadline = Date().addingTimeInterval(20)
        while !condition() {
            guard Date() < deadline else { throw SecretServiceTestFailure("timed out waiting for \(what)") }
            usleep(10_000)
        }
    }

    /// The contents of the agent's log at `path`.
    func log(_ path: String) -> String {
        (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
    }

    /// The bytes of every file of the vault folder.
    func vaultBytes() throws -> Data {
        var all = Data()
        for name in try FileManager.default.contentsOfDirectory(atPath: vaultDirectory) {
            all += (try? Data(contentsOf: URL(fileURLWithPath: vaultDirectory + "/" + name))) ?? Data()
        }
        return all
    }
}
