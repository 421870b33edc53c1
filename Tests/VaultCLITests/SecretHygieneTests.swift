import Foundation
import Testing

/// Secrets never appear in argv, in error messages, or in help; help and exit codes are documented.
@Suite struct SecretHygieneTests {
    @Test func secretNeverAppearsInTheCommandLineOfARunningAdd() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let secret = "cmdline-canary-7f3a9c"
        let running = try sandbox.start(["add", "canary", "--label", "test"], environment: key)
        // It is blocked reading standard input now; look at what /proc shows of it.
        var cmdline = Data()
        for _ in 0..<50 {
            cmdline = (try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(running.pid)/cmdline"))) ?? Data()
            if !cmdline.isEmpty { break }
            usleep(10_000)
        }
        #expect(String(decoding: cmdline, as: UTF8.self).contains("canary"))
        running.send(Data(text: secret))
        usleep(100_000)
        let during = (try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(running.pid)/cmdline"))) ?? Data()
        let result = running.finish()
        #expect(result.status == 0)
        #expect(!cmdline.contains(Data(text: secret)))
        #expect(!during.contains(Data(text: secret)))
        #expect(try sandbox.run(["get", "canary"], environment: key).stdout == Data(text: secret))
    }

    @Test func secretNeverAppearsInTheOutputOfFailingCommands() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let secret = "stderr-canary-55d1e0"
        #expect(try sandbox.run(["add", "s"], stdin: Data(text: secret), environment: key).status == 0)
        let bob = ["VAULT_KEY_FILE": try sandbox.keyFile("bob.key")]
        let failures: [([String], [String: String], Int32)] = [
            (["add", "s"], key, 73),
            (["add", "s"], bob, 77),
            (["add", "s", "--kind", "nope"], key, 64),
            (["add", "s", "--expires-in", "x"], key, 64),
            (["add", "s"], ["VAULT_DIR": sandbox.path("missing")], 66),
            (["add", "s"], [:], 64),
            (["get", "s"], bob, 77),
            (["inspect", "s"], bob, 77),
        ]
        for (arguments, environment, status) in failures {
            let result = try sandbox.run(arguments, stdin: Data(text: secret), environment: environment)
            #expect(result.status == status, "\(arguments): \(result.stderrText)")
            #expect(!result.stderr.contains(Data(text: secret)), "\(arguments) leaked the secret to stderr")
            #expect(!result.stdout.contains(Data(text: secret)), "\(arguments) leaked the secret to stdout")
            #expect(result.stderrText.hasPrefix("vault: ") || result.stderrText.hasPrefix("Error: "), "\(result.stderrText)")
        }
        for arguments in [["inspect", "s"], ["inspect", "s", "--json"], ["list"], ["list", "--json"], ["verify"]] {
            let result = try sandbox.run(arguments, environment: key)
            #expect(result.status == 0)
            #expect(!result.stdout.contains(Data(text: secret)) && !result.stderr.contains(Data(text: secret)), "\(arguments)")
        }
    }

    @Test func helpMatchesTheSnapshot() throws {
        let sandbox = try CLISandbox()
        defer { sandbox.cleanUp() }
        let help = try sandbox.run(["--help"])
        #expect(help.status == 0)
        if ProcessInfo.processInfo.environment["VAULT_RECORD_SNAPSHOTS"] == "1" {
            try help.stdout.write(to: CLIFixtures.sourceRoot.appendingPathComponent("help.txt"))
            return
        }
        let snapshot = try String(decoding: Data(contentsOf: CLIFixtures.root.appendingPathComponent("help.txt")), as: UTF8.self)
        #expect(help.stdoutText == snapshot, "re-record with VAULT_RECORD_SNAPSHOTS=1 when the commands change on purpose")
    }

    @Test func everyExitStatusIsDocumentedInHelpAndInCLIDoc() throws {
        let sandbox = try CLISandbox()
        defer { sandbox.cleanUp() }
        let help = try sandbox.run(["--help"]).stdoutText
        let doc = try String(contentsOf: CLIFixtures.sourceRoot.appendingPathComponent("../../../docs/CLI.md").standardized,
                             encoding: .utf8)
        for status in ["0", "1", "64", "65", "66", "73", "74", "75", "77"] {
            #expect(help.contains("\n  \(status) "), "vault --help documents \(status)")
            #expect(doc.contains("| \(status) |"), "docs/CLI.md documents \(status)")
        }
    }

    @Test func everyCommandHasHelp() throws {
        let sandbox = try CLISandbox()
        defer { sandbox.cleanUp() }
        for command in ["keygen", "init", "add", "get", "inspect", "list", "rm", "verify", "passwd", "rotate", "wipe"] {
            let result = try sandbox.run([command, "--help"])
            #expect(result.status == 0, "\(command)")
            #expect(result.stdoutText.contains("USAGE: vault \(command)"), "\(command)")
            #expect(!result.stdoutText.contains("lock-timeout"), "hidden options stay hidden")
        }
    }
}
