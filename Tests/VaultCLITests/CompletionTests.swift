import Foundation
import Testing
import TestScheduling

/// The generated completion scripts complete values, checked by driving each shell's real
/// completion (scripts/shell-complete: bash's completion function, zsh's compsys and fish's
/// pager in a pseudo-terminal) with the built `vault` on PATH.
///
/// A shell that is not installed fails the test under CI=true (.ci/run installs zsh and
/// fish) and skips it elsewhere.
@Suite(.blockingWork) struct CompletionTests {
    static let driver = CLIFixtures.sourceRoot.appendingPathComponent("../../../scripts/shell-complete").standardized.path

    /// A sandbox with a vault holding three entries, the completion scripts and `vault` on PATH.
    struct World {
        let sandbox: CLISandbox
        let key: [String: String]
        let keyPath: String

        init() throws {
            let (sandbox, key) = try CLISandbox.withVault()
            self.sandbox = sandbox
            self.key = key
            keyPath = try sandbox.keyFile()
            for name in ["github-token", "gitlab-token", "npm"] {
                let added = try sandbox.run(["add", name], stdin: Data("s3cret-\(name)".utf8), environment: key)
                guard added.status == 0 else { throw CLITestFailure("add \(name): \(added.stderrText)") }
            }
            try FileManager.default.createDirectory(atPath: sandbox.path("bin"), withIntermediateDirectories: true)
            try FileManager.default.createSymbolicLink(atPath: sandbox.path("bin/vault"), withDestinationPath: try CLIBinary.path())
            try FileManager.default.createDirectory(atPath: sandbox.path("files/sub-folder"), withIntermediateDirectories: true)
            _ = sandbox.privateFile("files/plain-file", "x")
            for shell in ["bash", "zsh", "fish"] {
                let script = try sandbox.run(["--generate-completion-script", shell])
                guard script.status == 0 else { throw CLITestFailure("no \(shell) script: \(script.stderrText)") }
                try script.stdout.write(to: URL(fileURLWithPath: sandbox.path("completion.\(shell)")))
            }
        }

        /// A new world, made off the cooperative threads.
        static func make() async throws -> World { try await CompletionTests.blocking { try World() } }

        /// What `shell` offers for `line`, with `environment` on top of the sandbox's.
        func complete(_ shell: String, _ line: String, environment extra: [String: String]) async throws -> String {
            try await CompletionTests.blocking { try completeBlocking(shell, line, environment: extra) }
        }

        private func completeBlocking(_ shell: String, _ line: String, environment extra: [String: String]) throws -> String {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: CompletionTests.driver)
            process.arguments = [shell, sandbox.path("completion.\(shell)"), line]
            var environment = sandbox.environment.merging(extra) { _, new in new }
            environment["PATH"] = sandbox.path("bin") + ":" + (environment["PATH"] ?? "/usr/bin:/bin")
            process.environment = environment
            process.currentDirectoryURL = URL(fileURLWithPath: sandbox.root)
            let output = Pipe()
            let errors = Pipe()
            process.standardOutput = output
            process.standardError = errors
            try process.run()
            let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            let problems = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            guard process.terminationStatus == 0 else {
                throw CLITestFailure("\(shell) completion of '\(line)' failed (\(process.terminationStatus)): \(problems)")
            }
            return text
        }

        /// The candidates, one per line (bash and zsh print exactly those).
        func candidates(_ shell: String, _ line: String, environment: [String: String]) async throws -> Set<String> {
            Set(try await complete(shell, line, environment: environment).split(separator: "\n").map(String.init).filter { !$0.isEmpty })
        }
    }

    /// Runs blocking work (processes, pipes) on a Dispatch thread and awaits it, so that these
    /// long tests do not hold one of the few cooperative threads that other suites'
    /// continuations need (a starved continuation makes timing-sensitive tests time out).
    static func blocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(with: Result { try body() }) }
        }
    }

    /// Whether `shell` is installed; records an issue under CI=true when it is not.
    static func available(_ shell: String) -> Bool {
        let found = ["/usr/bin/", "/bin/", "/usr/local/bin/"].contains { FileManager.default.isExecutableFile(atPath: $0 + shell) }
        if !found {
            if ProcessInfo.processInfo.environment["CI"] == "true" {
                Issue.record("\(shell) is required in CI (.ci/run installs it)")
            } else {
                print("skipped: \(shell) not installed")
            }
        }
        return found
    }

    @Test(arguments: ["bash", "zsh"])
    func bashAndZshCompleteEveryKindOfValue(shell: String) async throws {
        guard Self.available(shell) else { return }
        let world = try await World.make()
        defer { world.sandbox.cleanUp() }
        let key = world.key
        #expect(try await world.candidates(shell, "vault get git", environment: key) == ["github-token", "gitlab-token"])
        #expect(try await world.candidates(shell, "vault inspect n", environment: key) == ["npm"])
        #expect(try await world.candidates(shell, "vault rm ", environment: key) == ["github-token", "gitlab-token", "npm"])
        // The key named on the command line opens the vault just as well.
        #expect(try await world.candidates(shell, "vault get --key-file \(world.keyPath) git", environment: [:])
            == ["github-token", "gitlab-token"])
        #expect(try await world.candidates(shell, "vault add x --kind ", environment: key)
            == ["accessToken", "refreshToken", "idToken", "password", "generic", "totp"])
        // Issue 39: totp and generate, their options and values.
        #expect(try await world.candidates(shell, "vault tot", environment: key) == ["totp"])
        #expect(try await world.candidates(shell, "vault totp np", environment: key) == ["npm"])
        #expect(try await world.candidates(shell, "vault gene", environment: key) == ["generate"])
        #expect(try await world.candidates(shell, "vault generate --ch", environment: key) == ["--charset"])
        #expect(try await world.candidates(shell, "vault generate --charset ", environment: key)
            == ["lower,upper,digits,symbols", "lower,upper,digits", "lower,digits", "digits"])
        let generateOptions = try await world.complete(shell, "vault generate --", environment: key)
        for option in ["--length", "--charset", "--words", "--separator"] { #expect(generateOptions.contains(option), "\(generateOptions)") }
        #expect(try await world.candidates(shell, "vault add x --gen", environment: key) == ["--generate"])
        #expect(try await world.candidates(shell, "vault totp npm --j", environment: key) == ["--json"])
        // Issue 39: history, restore and audit.
        #expect(try await world.candidates(shell, "vault hist", environment: key) == ["history"])
        #expect(try await world.candidates(shell, "vault history gi", environment: key) == ["github-token", "gitlab-token"])
        #expect(try await world.candidates(shell, "vault restore n", environment: key) == ["npm"])
        #expect(try await world.candidates(shell, "vault restore npm --ver", environment: key) == ["--version"])
        #expect(try await world.candidates(shell, "vault history --li", environment: key) == ["--limit"])
        let auditOptions = try await world.complete(shell, "vault audit --", environment: key)
        for option in ["--since", "--json", "--verify"] { #expect(auditOptions.contains(option), "\(auditOptions)") }
        #expect(try await world.candidates(shell, "vault signin --merge-policy ", environment: key)
            == ["keepAccount", "keepGuest", "newestWins", "fail"])
        let files = try await world.complete(shell, "vault get --key-file \(world.sandbox.path("files"))/", environment: key)
        #expect(files.contains("plain-file"), "key files complete as files: \(files)")
        let folders = try await world.complete(shell, "vault list --vault \(world.sandbox.path("files"))/", environment: key)
        #expect(folders.contains("sub-folder"), "--vault completes folders: \(folders)")
        #expect(!folders.contains("plain-file"), "--vault offers only folders: \(folders)")
    }

    @Test func fishCompletesEveryKindOfValue() async throws {
        guard Self.available("fish") else { return }
        let world = try await World.make()
        defer { world.sandbox.cleanUp() }
        let key = world.key
        let names = try await world.complete("fish", "vault get git", environment: key)
        #expect(names.contains("github-token") && names.contains("gitlab-token"), "\(names)")
        #expect(!names.contains("npm"), "\(names)")
        let kinds = try await world.complete("fish", "vault add x --kind ", environment: key)
        for kind in ["accessToken", "refreshToken", "idToken", "password", "generic", "totp"] { #expect(kinds.contains(kind), "\(kinds)") }
        let charsets = try await world.complete("fish", "vault generate --charset ", environment: key)
        #expect(charsets.contains("lower,upper,digits,symbols"), "\(charsets)")
        let policies = try await world.complete("fish", "vault signin --merge-policy ", environment: key)
        for policy in ["keepAccount", "keepGuest", "newestWins", "fail"] { #expect(policies.contains(policy), "\(policies)") }
        let files = try await world.complete("fish", "vault get --key-file \(world.sandbox.path("files"))/pl", environment: key)
        #expect(files.contains("plain-file"), "\(files)")
        let folders = try await world.complete("fish", "vault list --vault \(world.sandbox.path("files"))/", environment: key)
        #expect(folders.contains("sub-folder"), "\(folders)")
        #expect(!folders.contains("plain-file"), "\(folders)")
    }

    /// Without a key that needs no question, names complete to nothing: no prompt (zsh and
    /// fish run in a terminal, so a prompt would hang the driver), no error text, no write.
    @Test(arguments: ["bash", "zsh", "fish"])
    func withoutAKeyNamesCompleteToNothingAndNothingIsAskedOrWritten(shell: String) async throws {
        guard Self.available(shell) else { return }
        let world = try await World.make()
        defer { world.sandbox.cleanUp() }
        let vaultDirectory = world.sandbox.vaultDirectory
        let before = try await Self.blocking { try ReadOnlyCommandTests.tree(vaultDirectory) }
        let offered = try await world.complete(shell, "vault get git", environment: [:])
        #expect(!offered.contains("github-token"), "\(offered)")
        #expect(!offered.lowercased().contains("passphrase"), "asked for a passphrase: \(offered)")
        #expect(!offered.contains("vault:"), "an error reached the shell: \(offered)")
        let wrongKey = world.sandbox.path("wrong.key")
        let sandbox = world.sandbox
        #expect(try await Self.blocking { try sandbox.run(["keygen", wrongKey]).status } == 0)
        let wrong = try await world.complete(shell, "vault get git", environment: ["VAULT_KEY_FILE": wrongKey])
        #expect(!wrong.contains("github-token") && !wrong.contains("vault:"), "\(wrong)")
        #expect(try await Self.blocking { try ReadOnlyCommandTests.tree(vaultDirectory) } == before)
    }

    @Test func aPassphraseFromTheEnvironmentOpensAPassphraseVaultForNames() async throws {
        guard Self.available("bash") else { return }
        let world = try await World.make()
        defer { world.sandbox.cleanUp() }
        let sandbox = world.sandbox
        let folder = sandbox.path("by-passphrase")
        let passphrase = ["VAULT_DIR": folder, "VAULT_PASSPHRASE": "correct horse battery staple"]
        let made = try await Self.blocking { () -> Int32 in
            guard try sandbox.run(["init"], environment: passphrase).status == 0 else { return 1 }
            return try sandbox.run(["add", "pass-entry"], stdin: Data("x".utf8), environment: passphrase).status
        }
        #expect(made == 0)
        #expect(try await world.candidates("bash", "vault get pa", environment: passphrase) == ["pass-entry"])
        var wrong = passphrase
        wrong["VAULT_PASSPHRASE"] = "not the passphrase at all"
        #expect(try await world.candidates("bash", "vault get pa", environment: wrong).isEmpty)
    }

    @Test func aMissingVaultCompletesNothingAndCreatesNothing() async throws {
        guard Self.available("bash") else { return }
        let world = try await World.make()
        defer { world.sandbox.cleanUp() }
        let missing = world.sandbox.path("nowhere")
        #expect(try await world.candidates("bash", "vault get ", environment: world.key.merging(["VAULT_DIR": missing]) { _, new in new }).isEmpty)
        #expect(!FileManager.default.fileExists(atPath: missing))
    }

    /// `get` and `rm` refuse the session's entries (`session.*`), so they are not offered; `inspect`
    /// shows them, so its completion does.
    @Test func getAndRmDoNotOfferTheSessionsEntries() async throws {
        guard Self.available("bash") else { return }
        let world = try await World.make()
        defer { world.sandbox.cleanUp() }
        let status = try await Self.blocking {
            try world.sandbox.run(["client", "--issuer", "http://127.0.0.1:9", "--token-endpoint", "http://127.0.0.1:9/token",
                                   "--client-id", "app", "--auth", "basic"], stdin: Data("client-secret".utf8), environment: world.key).status
        }
        #expect(status == 0)
        #expect(try await world.candidates("bash", "vault inspect sess", environment: world.key)
            == ["session.oauth-client", "session.oauth-client-secret"], "the session's entries are there")
        #expect(try await world.candidates("bash", "vault get ", environment: world.key) == ["github-token", "gitlab-token", "npm"])
        #expect(try await world.candidates("bash", "vault rm ", environment: world.key) == ["github-token", "gitlab-token", "npm"])
        #expect(try await world.candidates("bash", "vault get sess", environment: world.key).isEmpty)
        #expect(try await world.candidates("bash", "vault rm sess", environment: world.key).isEmpty)
    }
}
