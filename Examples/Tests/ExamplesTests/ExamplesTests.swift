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
