#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Testing
import TestScheduling

/// What one run of the `vault` binary did.
struct CLIResult {
    /// The exit status (128 + signal when killed).
    let status: Int32
    /// Everything written to standard output.
    let stdout: Data
    /// Everything written to standard error.
    let stderr: Data

    var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
    var stderrText: String { String(decoding: stderr, as: UTF8.self) }
}

/// A `vault` process that is still running, with its standard input held open.
final class RunningCLI: @unchecked Sendable {
    // Safe: `stdout`/`stderr` are written by one reader thread each and read only after
    // `readers.wait()`; everything else is set in `init` and not changed.
    let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private let errors = Pipe()
    private let readers = DispatchGroup()
    private var stdout = Data()
    private var stderr = Data()
    private var inputOpen = true

    /// Starts the binary with `arguments` and exactly `environment`.
    /// - Parameter standardOutput: a file to use as standard output instead of a pipe (e.g. /dev/full).
    /// - Parameter executable: another copy of `vault` to run (default: the built one).
    init(_ arguments: [String], environment: [String: String], standardOutput: FileHandle? = nil, executable: String? = nil) throws {
        Self.ignoreBrokenPipes
        process.executableURL = URL(fileURLWithPath: try executable ?? CLIBinary.path())
        process.arguments = arguments
        process.environment = environment
        process.standardInput = input
        process.standardOutput = standardOutput ?? output
        process.standardError = errors
        try process.run()
        let outputHandle = output.fileHandleForReading
        let errorHandle = errors.fileHandleForReading
        if standardOutput == nil {
            DispatchQueue.global().async(group: readers) { self.stdout = outputHandle.readDataToEndOfFile() }
        }
        DispatchQueue.global().async(group: readers) { self.stderr = errorHandle.readDataToEndOfFile() }
        try? output.fileHandleForWriting.close()
        try? errors.fileHandleForWriting.close()
        try? input.fileHandleForReading.close()
    }

    /// The process id, for /proc.
    var pid: Int32 { process.processIdentifier }

    /// Writes to the child's standard input with `write(2)`; a child that already exited
    /// gives `EPIPE`, which is ignored (SIGPIPE is ignored in the test process).
    func send(_ data: Data) {
        let descriptor = input.fileHandleForWriting.fileDescriptor
        data.withUnsafeBytes { bytes in
            guard let base = bytes.baseAddress else { return }
            var offset = 0
            while offset < bytes.count {
                let written = write(descriptor, base + offset, bytes.count - offset)
                if written < 0, errno == EINTR { continue }
                guard written > 0 else { return }
                offset += written
            }
        }
    }

    /// Closes the child's standard input (end of file).
    func closeInput() {
        guard inputOpen else { return }
        inputOpen = false
        try? input.fileHandleForWriting.close()
    }

    /// Waits for the exit, killing the child after `timeout` seconds (recorded as an issue).
    func finish(timeout: Double = 30, sourceLocation: SourceLocation = #_sourceLocation) -> CLIResult {
        BlockingWait.check("waiting for vault \(process.arguments?.first ?? "")", sourceLocation: sourceLocation)
        closeInput()
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning, Date() < deadline { usleep(2_000) }
        if process.isRunning {
            Issue.record("vault \(process.arguments ?? []) still running after \(timeout) s; killed", sourceLocation: sourceLocation)
            kill(process.processIdentifier, SIGKILL)
        }
        process.waitUntilExit()
        readers.wait()
        let status = process.terminationReason == .uncaughtSignal ? 128 + process.terminationStatus : process.terminationStatus
        return CLIResult(status: status, stdout: stdout, stderr: stderr)
    }

    private static let ignoreBrokenPipes: Void = {
        _ = signal(SIGPIPE, SIG_IGN)
    }()
}

/// One test's world: a private temporary directory, a vault directory inside it, fixture
/// key files copied 0600, and an environment free of the developer's VAULT_* variables.
struct CLISandbox {
    let root: String

    init() throws {
        root = NSTemporaryDirectory() + "vault-cli-test-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
    }

    func cleanUp() { try? FileManager.default.removeItem(atPath: root) }

    func path(_ name: String) -> String { (root as NSString).appendingPathComponent(name) }

    /// The vault directory the environment points at.
    var vaultDirectory: String { path("vault") }
    /// The vault file.
    var vaultFile: String { (vaultDirectory as NSString).appendingPathComponent("secrets.vault") }

    /// The inherited environment without VAULT_*, XDG_DATA_HOME and XDG_STATE_HOME (so the
    /// rollback memory is under HOME), with VAULT_DIR and HOME inside the sandbox and a fixed help width.
    var environment: [String: String] {
        var environment = ProcessInfo.processInfo.environment.filter {
            !$0.key.hasPrefix("VAULT_") && $0.key != "XDG_DATA_HOME" && $0.key != "XDG_STATE_HOME"
        }
        environment["VAULT_DIR"] = vaultDirectory
        environment["HOME"] = root
        environment["COLUMNS"] = "100"
        return environment
    }

    /// Copies a committed fixture key into the sandbox with mode 0600 and returns its path.
    func keyFile(_ name: String = "alice.key") throws -> String {
        let destination = path(name)
        if !FileManager.default.fileExists(atPath: destination) {
            let data = try Data(contentsOf: CLIFixtures.root.appendingPathComponent("keys/\(name)"))
            _ = FileManager.default.createFile(atPath: destination, contents: data, attributes: [.posixPermissions: 0o600])
        }
        return destination
    }

    /// Writes a private (0600) file in the sandbox.
    func privateFile(_ name: String, _ contents: String) -> String {
        let destination = path(name)
        _ = FileManager.default.createFile(atPath: destination, contents: Data(contents.utf8), attributes: [.posixPermissions: 0o600])
        return destination
    }

    /// Runs `vault arguments` to completion with `stdin` as its whole standard input.
    @discardableResult
    func run(_ arguments: [String], stdin: Data = Data(), environment extra: [String: String] = [:],
             standardOutput: FileHandle? = nil, timeout: Double = 30,
             sourceLocation: SourceLocation = #_sourceLocation) throws -> CLIResult {
        let running = try start(arguments, environment: extra, standardOutput: standardOutput)
        running.send(stdin)
        return running.finish(timeout: timeout, sourceLocation: sourceLocation)
    }

    /// Runs `executable arguments` (a copy of `vault` elsewhere) as `run` runs the built one.
    func runBinary(_ executable: String, _ arguments: [String], stdin: Data = Data(), environment extra: [String: String] = [:],
                   timeout: Double = 30, sourceLocation: SourceLocation = #_sourceLocation) throws -> CLIResult {
        let running = try RunningCLI(arguments, environment: environment.merging(extra) { _, new in new }, executable: executable)
        running.send(stdin)
        return running.finish(timeout: timeout, sourceLocation: sourceLocation)
    }

    /// Starts `vault arguments` and leaves its standard input open.
    func start(_ arguments: [String], environment extra: [String: String] = [:],
               standardOutput: FileHandle? = nil) throws -> RunningCLI {
        try RunningCLI(arguments, environment: environment.merging(extra) { _, new in new }, standardOutput: standardOutput)
    }

    /// A sandbox with an initialised vault opened by the fixture key alice.key (via VAULT_KEY_FILE).
    static func withVault() throws -> (CLISandbox, [String: String]) {
        let sandbox = try CLISandbox()
        let key = ["VAULT_KEY_FILE": try sandbox.keyFile()]
        let result = try sandbox.run(["init"], environment: key)
        guard result.status == 0 else { throw CLITestFailure("vault init failed: \(result.stderrText)") }
        return (sandbox, key)
    }
}

/// Finds the built `vault` next to the test bundle (as `BuiltProducts` does in CredentialVaultTests).
enum CLIBinary {
    static func path() throws -> String {
        var candidates: [URL] = []
        if let executable = Bundle.main.executableURL { candidates.append(executable.deletingLastPathComponent()) }
        candidates.append(Bundle.main.bundleURL)
        candidates.append(Bundle.main.bundleURL.deletingLastPathComponent())
        for directory in candidates {
            let candidate = directory.appendingPathComponent("vault").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        throw CLITestFailure("cannot find the built vault binary near \(candidates.map(\.path))")
    }
}

/// The committed fixtures of this target. They never change: a changed help page gets a new
/// snapshot file (VAULT_RECORD_SNAPSHOTS=1 writes a missing one), never an edited old one.
enum CLIFixtures {
    static var root: URL {
        get throws {
            try #require(Bundle.module.url(forResource: "Fixtures", withExtension: nil), "fixtures are bundled")
        }
    }

    /// The fixture folder in the source tree, for re-recording snapshots.
    static let sourceRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")
}

struct CLITestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

extension Data {
    /// UTF-8 bytes of `text`.
    init(text: String) { self.init(text.utf8) }

    /// Whether `needle` occurs in these bytes.
    func contains(_ needle: Data) -> Bool { !needle.isEmpty && range(of: needle) != nil }
}
