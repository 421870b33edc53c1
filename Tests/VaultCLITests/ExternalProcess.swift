#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Testing
import TestScheduling

/// Runs programs other than `vault` (git, python3, sh) for the integration tests, each
/// with a bounded wait: a child still running at the deadline is killed and recorded.
enum ExternalProcess {
    /// The full path of `name` on PATH, or nil.
    static func find(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for directory in path.split(separator: ":") {
            let candidate = "\(directory)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    /// Whether the tests run in CI, where a missing real component is a failure, not a skip.
    static var isCI: Bool { ProcessInfo.processInfo.environment["CI"] == "true" }

    /// `name` on PATH; under CI=true a missing one is recorded as a failure, elsewhere the test skips quietly.
    static func required(_ name: String, sourceLocation: SourceLocation = #_sourceLocation) -> String? {
        if let found = find(name) { return found }
        if isCI { Issue.record("\(name) is not installed; CI must install it (.ci/run)", sourceLocation: sourceLocation) }
        return nil
    }

    /// Runs `executable arguments` with exactly `environment` and `stdin`, waiting at most `timeout` seconds.
    static func run(_ executable: String, _ arguments: [String], environment: [String: String], stdin: Data = Data(),
                    directory: String? = nil, timeout: Double = 60,
                    sourceLocation: SourceLocation = #_sourceLocation) throws -> CLIResult {
        BlockingWait.check("waiting for \(executable)", sourceLocation: sourceLocation)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = environment
        if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
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
            Issue.record("\(executable) \(arguments) still running after \(timeout) s; killed", sourceLocation: sourceLocation)
            kill(process.processIdentifier, SIGKILL)
        }
        process.waitUntilExit()
        group.wait()
        let status = process.terminationReason == .uncaughtSignal ? 128 + process.terminationStatus : process.terminationStatus
        return CLIResult(status: status, stdout: stdout, stderr: stderr)
    }
}
