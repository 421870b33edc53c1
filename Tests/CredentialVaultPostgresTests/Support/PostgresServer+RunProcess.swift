import Foundation

extension PostgresServer {
    /// Runs `process` to its end with its stdout and stderr read through pipes; returns stdout
    /// without surrounding white space. A non-zero exit throws `TestFailure(failure(status, stderr))`.
    static func runCapturing(_ process: Process, failure: (Int32, String) -> String) throws -> String {
        let output = Pipe(), errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        let errorData = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw TestFailure(failure(process.terminationStatus, String(decoding: errorData, as: UTF8.self)))
        }
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
