import CredentialVault
import Foundation
import Testing
import TestScheduling

/// Secrets never appear in argv, in error messages, or in help; help and exit codes are documented.
@Suite(.blockingWork) struct SecretHygieneTests {
    @Test func secretNeverAppearsInTheCommandLineOfARunningAdd() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let secret = "cmdline-canary-7f3a9c"
        let running = try sandbox.start(["add", "canary", "--label", "test"], environment: key)
        // It is blocked reading standard input now; look at what /proc shows of it.
        // Bounded by time, not by a few polls: on a loaded machine the start can take seconds.
        var cmdline = Data()
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
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

    /// The current snapshot of `vault --help` in 80 columns. Fixtures never change: when the
    /// help changes on purpose, add a new file (VAULT_RECORD_SNAPSHOTS=1 writes a missing one)
    /// and point this at it. help.txt (100 columns) was the first wave's; v2 this wave's before `exec` landed;
    /// v3 before `passwd` re-keyed (format-v2 branch: its abstract changed); v4 before the OAuth
    /// commands (`refresh`, `client`) joined on main; v5 before `migrate-store` and the PostgreSQL
    /// environment (VAULT_STORE, VAULT_STORE_NAME, PGPASSWORD/PGPASSFILE); v6 before exit status
    /// 64 named the calls a fleet session does not have (`unsupportedOperation`); v7 before `inject`,
    /// `import` and the exec/import environment (XDG_RUNTIME_DIR, TMPDIR, GNUPGHOME); v8 before `agent`,
    /// `unlock`, `lock`, the agent in the key order and exit statuses 69/77 naming the agent.
    /// v9 before `upgrade-format` (format 3).
    /// v10 before `signin --browser` (exit statuses 71, 75 and 76 grew).
    /// v11 before issue 39's `history`, `restore`, `totp` and `generate`.
    /// v12 before `audit` (issue 39) and `import`'s Secret Service source (issue 37).
    /// v13 before the root's own `--version` (no longer in OPTIONS, so that subcommands do not
    /// inherit it) and exit statuses 66/69/73 naming the Secret Service's helper, bus and name.
    /// v14 before 66 and 73 were reworded so that man(1) at 100 columns breaks no word in them.
    static let helpSnapshot = "help-80-columns-v15.txt"

    @Test func helpMatchesTheSnapshot() throws {
        let sandbox = try CLISandbox()
        defer { sandbox.cleanUp() }
        let help = try sandbox.run(["--help"], environment: ["COLUMNS": "80"])
        #expect(help.status == 0)
        let recorded = CLIFixtures.sourceRoot.appendingPathComponent(Self.helpSnapshot)
        if ProcessInfo.processInfo.environment["VAULT_RECORD_SNAPSHOTS"] == "1",
           !FileManager.default.fileExists(atPath: recorded.path) {
            try help.stdout.write(to: recorded)
            return
        }
        let snapshot = try String(decoding: Data(contentsOf: CLIFixtures.root.appendingPathComponent(Self.helpSnapshot)), as: UTF8.self)
        #expect(help.stdoutText == snapshot, "add a new snapshot file when the commands change on purpose")
    }

    @Test func rootHelpFitsEightyColumnsWithNothingBrokenAtColumnZero() throws {
        let sandbox = try CLISandbox()
        defer { sandbox.cleanUp() }
        let help = try sandbox.run(["--help"], environment: ["COLUMNS": "80"]).stdoutText
        let lines = help.split(separator: "\n", omittingEmptySubsequences: false)
        for line in lines { #expect(line.count <= 80, "wider than 80 columns: \(line)") }
        // Inside the hand-laid-out blocks every line is a heading or indented.
        let start = try #require(lines.firstIndex(of: "ENVIRONMENT:"))
        let end = try #require(lines.firstIndex { $0.hasPrefix("USAGE:") })
        for line in lines[start..<end] where !line.isEmpty {
            #expect(line.hasPrefix("  ") || ["ENVIRONMENT:", "EXIT STATUS:", "EXAMPLES:"].contains(String(line)),
                    "a line broken at column 0: \(line)")
        }
        for heading in ["ENVIRONMENT:", "EXIT STATUS:", "EXAMPLES:"] { #expect(lines.contains(Substring(heading))) }
        #expect(help.contains("  VAULT_PASSPHRASE "))
        #expect(help.contains("  vault keygen ~/.config/vault/key"))
    }

    @Test func versionComesFromTheOneSourceAndTheChangelogNamesIt() throws {
        let sandbox = try CLISandbox()
        defer { sandbox.cleanUp() }
        let version = try sandbox.run(["--version"])
        #expect(version.status == 0)
        #expect(version.stdoutText == VaultVersion.current + "\n")
        let release = VaultVersion.current.split(separator: "-").first.map(String.init) ?? ""
        let changelog = try String(contentsOf: CLIFixtures.sourceRoot.appendingPathComponent("../../../CHANGELOG.md").standardized,
                                   encoding: .utf8)
        // A -dev build is ahead of its release: the Unreleased section says which; a release has its own section.
        if VaultVersion.current.hasSuffix("-dev") {
            #expect(changelog.contains("## [Unreleased] (will be \(release))"))
        } else {
            #expect(changelog.contains("## [\(release)]"))
        }
        #expect(changelog.contains("## [0.1.0]"))
    }

    @Test func onlyTheRootAnswersVersionSoRestoreListsItsOwnOnce() throws {
        let sandbox = try CLISandbox()
        defer { sandbox.cleanUp() }
        let restore = try sandbox.run(["restore", "--help"])
        #expect(restore.status == 0)
        let options = restore.stdoutText.split(separator: "\n").filter { $0.trimmingCharacters(in: .whitespaces).hasPrefix("--version") }
        #expect(options.count == 1, "\(restore.stdoutText)")
        #expect(options.first?.contains("--version <N>") == true)
        #expect(!restore.stdoutText.contains("Show the version."))
        // Another subcommand has no --version at all; the root still prints the version alone.
        #expect(!(try sandbox.run(["get", "--help"]).stdoutText.contains("--version")))
        let version = try sandbox.run(["--version"])
        #expect(version.status == 0)
        #expect(version.stdoutText == VaultVersion.current + "\n")
        #expect(version.stderr.isEmpty)
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
