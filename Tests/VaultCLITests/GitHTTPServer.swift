#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Testing
import TestScheduling

/// The project's git smart-HTTP test server (scripts/git-http-server.py: `git http-backend`
/// behind Python's http.server, basic authentication) on 127.0.0.1 and a free port;
/// stopped by its PID.
final class GitHTTPServer {
    let process = Process()
    let port: Int
    private let output = Pipe()

    /// Starts the server for the repositories under `root`, accepting `user` and `password`;
    /// waits at most 15 s for its "listening PORT" line.
    init(root: String, user: String, password: String, environment: [String: String],
         sourceLocation: SourceLocation = #_sourceLocation) throws {
        BlockingWait.check("waiting for the git HTTP server", sourceLocation: sourceLocation)
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("scripts/git-http-server.py").path
        guard let python = ExternalProcess.find("python3") else { throw CLITestFailure("python3 is needed for the git HTTP server") }
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [script, root]
        var environment = environment
        environment["GIT_HTTP_USER"] = user
        environment["GIT_HTTP_PASSWORD"] = password
        process.environment = environment
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let descriptor = output.fileHandleForReading.fileDescriptor
        var line: [UInt8] = []
        let deadline = Date().addingTimeInterval(15)
        var pollDescriptor = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        while Date() < deadline, !line.contains(0x0A) {
            guard poll(&pollDescriptor, 1, 100) > 0 else { continue }
            var byte: UInt8 = 0
            guard read(descriptor, &byte, 1) == 1 else { break }
            line.append(byte)
        }
        let text = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard text.hasPrefix("listening "), let port = Int(text.dropFirst("listening ".count)) else {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw CLITestFailure("the git HTTP server did not start within 15 s (said '\(text)')")
        }
        self.port = port
    }

    /// Stops the server by its PID and waits for it.
    func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGTERM) }
        let deadline = Date().addingTimeInterval(5)
        while process.isRunning, Date() < deadline { usleep(5_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}
