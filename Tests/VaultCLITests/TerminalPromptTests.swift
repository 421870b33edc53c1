import Foundation
import Testing
import TestScheduling

/// Prompts on a real pseudo-terminal (driven by `Fixtures/pty-drive.py`): echo off for
/// passphrases and secrets, a new passphrase asked twice, `wipe` confirmed by typing.
@Suite(.blockingWork, .enabled(if: TerminalDriver.isAvailable, "needs python3 for its pty module"))
struct TerminalPromptTests {
    @Test func initAsksTwiceAndRefusesDifferentPassphrases() throws {
        let sandbox = try CLISandbox()
        defer { sandbox.cleanUp() }
        let mismatch = try TerminalDriver.run(["init"], answers: ["first-pass\r", "second-pass\r"], in: sandbox)
        #expect(mismatch.status == 64)
        #expect(mismatch.output.contains("differ"))
        #expect(!FileManager.default.fileExists(atPath: sandbox.vaultFile))
        let created = try TerminalDriver.run(["init"], answers: ["typed-passphrase\r", "typed-passphrase\r"], in: sandbox)
        #expect(created.status == 0, "\(created.output)")
        #expect(created.output.contains("Repeat"))
        #expect(!created.output.contains("typed-pass"), "echo is off")
    }

    @Test func addFromATerminalHidesTheSecretAndDropsTheNewline() throws {
        let sandbox = try CLISandbox()
        defer { sandbox.cleanUp() }
        let passphrase = ["VAULT_PASSPHRASE": "env-passphrase"]
        #expect(try sandbox.run(["init"], environment: passphrase).status == 0)
        // Backspace edits: "tty-secrex" + DEL + "t" is "tty-secret".
        let added = try TerminalDriver.run(["add", "typed"], answers: ["tty-secrex\u{7F}t\r"], in: sandbox, environment: passphrase)
        #expect(added.status == 0, "\(added.output)")
        #expect(!added.output.contains("tty-secre"), "echo is off")
        #expect(try sandbox.run(["get", "typed"], environment: passphrase).stdout == Data(text: "tty-secret"))
    }

    @Test func wipeWithoutYesAsksForTheWord() throws {
        let (sandbox, _) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let declined = try TerminalDriver.run(["wipe"], answers: ["no\r"], in: sandbox)
        #expect(declined.status == 64)
        #expect(FileManager.default.fileExists(atPath: sandbox.vaultFile))
        let confirmed = try TerminalDriver.run(["wipe"], answers: ["wipe\r"], in: sandbox)
        #expect(confirmed.status == 0, "\(confirmed.output)")
        #expect(!FileManager.default.fileExists(atPath: sandbox.vaultFile))
    }
}

/// Runs `vault` on a pseudo-terminal through python3's `pty` module.
enum TerminalDriver {
    static let python = ["/usr/bin/python3", "/usr/local/bin/python3"].first { FileManager.default.isExecutableFile(atPath: $0) }

    static var isAvailable: Bool { python != nil }

    static func run(_ arguments: [String], answers: [String], in sandbox: CLISandbox,
                    environment extra: [String: String] = [:]) throws -> (status: Int32, output: String) {
        let python = try #require(python)
        let script = try CLIFixtures.root.appendingPathComponent("pty-drive.py").path
        let spec: [String: Any] = [
            "argv": [try CLIBinary.path()] + arguments,
            "env": sandbox.environment.merging(extra) { $1 },
            "inputs": answers,
        ]
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [script]
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        try input.fileHandleForWriting.write(contentsOf: JSONSerialization.data(withJSONObject: spec))
        try input.fileHandleForWriting.close()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let result = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any], "pty-drive.py printed JSON")
        return (Int32((result["status"] as? NSNumber)?.intValue ?? -1), result["output"] as? String ?? "")
    }
}
