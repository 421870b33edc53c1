import Foundation
import Testing

/// Runs each example program of `Examples/` (the five flows the documentation walks
/// through); each exits 0 only when its flow ended as the article says.
@Suite struct ExamplesTests {
    @Test(arguments: ["AnonymousModeExample", "GuestSignInExample", "GuestPurchasesExample", "LaunchLoaderExample",
                      "OnboardingExample"])
    func exampleRunsToItsDocumentedOutcome(name: String) throws {
        let temp = try TemporaryDirectory("vault-example")
        defer { temp.cleanUp() }
        // The examples' rollback memory goes to its own temporary folder, not to ~/.local/state
        // (and not into `temp`, which the example must leave empty).
        let state = try TemporaryDirectory("vault-example-state")
        defer { state.cleanUp() }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try BuiltProducts.path(of: name))
        var environment = ["TMPDIR": temp.path, "PATH": "/usr/bin:/bin", "XDG_STATE_HOME": state.path]
        // Under scripts/sanitize the example is checked with the same options and suppressions.
        for name in ["ASAN_OPTIONS", "LSAN_OPTIONS", "TSAN_OPTIONS"] {
            environment[name] = ProcessInfo.processInfo.environment[name]
        }
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(name):\n\(text)")
        #expect(text.contains("example passed"), "\(name):\n\(text)")
        #expect(!text.contains("FAILED"), "\(name):\n\(text)")
        let leftovers = (try? FileManager.default.contentsOfDirectory(atPath: temp.path)) ?? []
        #expect(leftovers.isEmpty, "\(name) left \(leftovers)")
    }
}

/// The example with the library's real OAuth client, against the real authorization server that
/// scripts/test starts (`$VAULT_OAUTH_SERVER`): the test plays the user, approving the code the
/// example shows, as the user would in a browser.
@Suite(.enabled(if: ProcessInfo.processInfo.environment["VAULT_OAUTH_SERVER"] != nil
                || ProcessInfo.processInfo.environment["CI"] == "true"))
struct OAuthExampleTests {
    @Test func theDeviceSignInExampleRunsAgainstTheRealServer() throws {
        guard let server = ProcessInfo.processInfo.environment["VAULT_OAUTH_SERVER"] else {
            Issue.record("no OAuth server: VAULT_OAUTH_SERVER is not set (run the examples through scripts/test)")
            return
        }
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().path
        let temp = try TemporaryDirectory("vault-example")
        defer { temp.cleanUp() }
        let state = try TemporaryDirectory("vault-example-state")
        defer { state.cleanUp() }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try BuiltProducts.path(of: "OAuthSignInExample"))
        process.environment = ["TMPDIR": temp.path, "PATH": "/usr/bin:/bin", "XDG_STATE_HOME": state.path,
                               "VAULT_OAUTH_SERVER": server]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        let seen = SeenOutput()
        output.fileHandleForReading.readabilityHandler = { handle in
            let chunk = handle.availableData
            guard !chunk.isEmpty, let code = seen.append(chunk) else { return }
            // The user approves in their browser: here, the server's own approval script.
            let approve = Process()
            approve.executableURL = URL(fileURLWithPath: repository + "/scripts/oauth-server")
            approve.arguments = ["approve", server, code]
            approve.standardOutput = FileHandle.nullDevice
            approve.standardError = FileHandle.nullDevice
            try? approve.run()
            approve.waitUntilExit()
        }
        try process.run()
        let deadline = Date().addingTimeInterval(120)
        while process.isRunning, Date() < deadline { usleep(50_000) }
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        output.fileHandleForReading.readabilityHandler = nil
        let text = seen.text
        #expect(process.terminationStatus == 0, "\(text)")
        #expect(text.contains("example passed"), "\(text)")
        #expect(!text.contains("FAILED"), "\(text)")
        let leftovers = (try? FileManager.default.contentsOfDirectory(atPath: temp.path)) ?? []
        #expect(leftovers.isEmpty, "the example left \(leftovers)")
    }
}

/// The example's output so far; hands out the device code once, when its line is complete.
final class SeenOutput: @unchecked Sendable {
    private let lock = NSLock()
    private var data = Data()
    private var handedOut = false

    /// Appends `chunk`; returns the user code the first time a complete "enter the code X" line is seen.
    func append(_ chunk: Data) -> String? {
        lock.lock(); defer { lock.unlock() }
        data.append(chunk)
        let text = String(decoding: data, as: UTF8.self)
        guard !handedOut, let range = text.range(of: "enter the code "), text[range.upperBound...].contains("\n") else { return nil }
        handedOut = true
        return String(text[range.upperBound...].prefix { $0.isLetter || $0.isNumber || $0 == "-" })
    }

    var text: String {
        lock.lock(); defer { lock.unlock() }
        return String(decoding: data, as: UTF8.self)
    }
}
