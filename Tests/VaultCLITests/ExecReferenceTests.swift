#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Testing
import TestScheduling

/// `vault exec --env-file`, `--mask` and `--file`: references filled in, values hidden in the
/// command's output, secret files that do not outlive the command.
@Suite(.blockingWork) struct ExecReferenceTests {
    static let secret = "ref-secret-\(UUID().uuidString)"
    static let other = "other-secret-\(UUID().uuidString)"

    /// A vault holding `api` and `db/password`, and a private runtime folder for --file.
    static func sandbox() throws -> (CLISandbox, [String: String]) {
        let (sandbox, key) = try CLISandbox.withVault()
        for (name, value) in [("api", secret), ("db/password", other), ("pin", "123")] {
            let add = try sandbox.run(["add", name], stdin: Data(text: value), environment: key)
            guard add.status == 0 else { throw CLITestFailure("add failed: \(add.stderrText)") }
        }
        let runtime = sandbox.path("runtime")
        try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        return (sandbox, key.merging(["XDG_RUNTIME_DIR": runtime]) { _, new in new })
    }

    @Test func anEnvFileFillsReferencesAndPassesOtherValuesThrough() throws {
        let (sandbox, key) = try Self.sandbox()
        defer { sandbox.cleanUp() }
        let file = sandbox.privateFile("app.env", """
            \u{FEFF}# the app's settings\r
            export API_TOKEN=vault://api\r
            DB_PASSWORD="vault://db%2Fpassword"\r
            PLAIN='kept as ${HOME}'\r
            URL=https://example.test/?a=1 # a comment\r
            OVERRIDDEN=old\r
            """)
        let result = try sandbox.run(["exec", "--env-file", file, "--env", "OVERRIDDEN=api", "--",
                                      "sh", "-c", "printf '%s|%s|%s|%s|%s' \"$API_TOKEN\" \"$DB_PASSWORD\" \"$PLAIN\" \"$URL\" \"$OVERRIDDEN\""],
                                     environment: key)
        #expect(result.status == 0, "\(result.stderrText)")
        #expect(result.stdoutText == "\(Self.secret)|\(Self.other)|kept as ${HOME}|https://example.test/?a=1|\(Self.secret)")
    }

    @Test func aLaterEnvFileWinsAndTheEnvironmentLoses() throws {
        let (sandbox, key) = try Self.sandbox()
        defer { sandbox.cleanUp() }
        let first = sandbox.privateFile("a.env", "X=one\nY=vault://api\n")
        let second = sandbox.privateFile("b.env", "X=two\n")
        let result = try sandbox.run(["exec", "--env-file", first, "--env-file", second, "--", "sh", "-c", "printf '%s %s' \"$X\" \"$Y\""],
                                     environment: key.merging(["X": "inherited"]) { _, new in new })
        #expect(result.stdoutText == "two \(Self.secret)")
    }

    @Test func aReferenceToNoEntryStopsBeforeTheCommandStarts() throws {
        let (sandbox, key) = try Self.sandbox()
        defer { sandbox.cleanUp() }
        let marker = sandbox.path("ran")
        let file = sandbox.privateFile("app.env", "GOOD=vault://api\nMISSING=vault://no-such-entry\n")
        let result = try sandbox.run(["exec", "--env-file", file, "--", "sh", "-c", ": > '\(marker)'"], environment: key)
        #expect(result.status == 66)
        #expect(result.stderrText.contains("vault://no-such-entry"))
        #expect(result.stderrText.contains("app.env, line 2"))
        #expect(!result.stderr.contains(Data(text: Self.secret)))
        #expect(!FileManager.default.fileExists(atPath: marker))
        let malformed = sandbox.privateFile("bad.env", "A=vault://api#x\n")
        #expect(try sandbox.run(["exec", "--env-file", malformed, "--", "true"], environment: key).status == 64)
        let unparsable = sandbox.privateFile("worse.env", "A=\"unclosed\n")
        #expect(try sandbox.run(["exec", "--env-file", unparsable, "--", "true"], environment: key).status == 64)
        #expect(try sandbox.run(["exec", "--env-file", sandbox.path("absent.env"), "--", "true"], environment: key).status == 66)
    }

    @Test func maskHidesSecretsWrittenOneByteAtATimeOnBothStreams() throws {
        let (sandbox, key) = try Self.sandbox()
        defer { sandbox.cleanUp() }
        // The child writes each secret one byte per write, with pauses, so vault reads it in pieces.
        let script = """
            import os, sys, time
            for fd, value in ((1, os.environ["A"]), (2, os.environ["B"])):
                os.write(fd, b"before ")
                for byte in value.encode():
                    os.write(fd, bytes([byte])); time.sleep(0.002)
                os.write(fd, b" after " + os.environ["P"].encode() + b"\\n")
            sys.exit(3)
            """
        let result = try sandbox.run(["exec", "--mask", "--env", "A=api", "--env", "B=db/password", "--env", "P=pin", "--",
                                      "python3", "-c", script], environment: key)
        #expect(result.status == 3, "the command's status comes back")
        #expect(result.stdoutText == "before <concealed by vault> after 123\n")
        #expect(result.stderrText.contains("before <concealed by vault> after 123\n"))
        #expect(result.stderrText.contains("P is shorter than 4 bytes"), "a value too short to mask is named")
        #expect(!result.stdout.contains(Data(text: Self.secret)))
        #expect(!result.stderr.contains(Data(text: Self.other)))
    }

    @Test func maskPassesASignalDeathThrough() throws {
        let (sandbox, key) = try Self.sandbox()
        defer { sandbox.cleanUp() }
        let result = try sandbox.run(["exec", "--mask", "--env", "A=api", "--", "sh", "-c", "echo \"$A\"; kill -TERM $$"], environment: key)
        #expect(result.status == 128 + SIGTERM)
        #expect(result.stdoutText == "<concealed by vault>\n")
    }

    @Test func fileWritesAPrivateFileThatIsGoneAfterwards() throws {
        let (sandbox, key) = try Self.sandbox()
        defer { sandbox.cleanUp() }
        let script = "stat -c '%a' \"$CERT\"; stat -c '%a' \"$(dirname \"$CERT\")\"; cat \"$CERT\"; echo; echo \"$CERT\""
        let result = try sandbox.run(["exec", "--file", "CERT=api", "--", "sh", "-c", script], environment: key)
        #expect(result.status == 0, "\(result.stderrText)")
        let lines = result.stdoutText.split(separator: "\n").map(String.init)
        #expect(lines.count == 4)
        #expect(lines.first == "600")
        #expect(lines.dropFirst().first == "700")
        #expect(lines.dropFirst(2).first == Self.secret)
        let path = try #require(lines.last)
        #expect(path.hasPrefix(sandbox.path("runtime") + "/vault-exec/run-"))
        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(!FileManager.default.fileExists(atPath: (path as NSString).deletingLastPathComponent))
        #expect(!String(decoding: try Data(contentsOf: URL(fileURLWithPath: "/proc/self/environ")), as: UTF8.self).contains(Self.secret))
    }

    @Test func fileIsRemovedWhenTheCommandIsKilled() throws {
        let (sandbox, key) = try Self.sandbox()
        defer { sandbox.cleanUp() }
        let pathFile = sandbox.path("path")
        let result = try sandbox.run(["exec", "--file", "CERT=api", "--", "sh", "-c", "echo \"$CERT\" > '\(pathFile)'; kill -KILL $$"],
                                     environment: key)
        #expect(result.status == 128 + SIGKILL)
        let path = try String(contentsOfFile: pathFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(!path.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test func fileIsRemovedWhenVaultIsTerminated() throws {
        let (sandbox, key) = try Self.sandbox()
        defer { sandbox.cleanUp() }
        let pathFile = sandbox.path("path")
        let running = try sandbox.start(["exec", "--file", "CERT=api", "--", "sh", "-c",
                                         "echo \"$CERT\" > '\(pathFile).tmp'; mv '\(pathFile).tmp' '\(pathFile)'; exec sleep 30"],
                                        environment: key)
        let deadline = Date().addingTimeInterval(20)
        while !FileManager.default.fileExists(atPath: pathFile), Date() < deadline { usleep(10_000) }
        let path = try String(contentsOfFile: pathFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(FileManager.default.fileExists(atPath: path), "the file is there while the command runs")
        kill(running.pid, SIGTERM)
        let result = running.finish(timeout: 20)
        #expect(result.status == 128 + SIGTERM)
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test func theNextExecRemovesWhatAKilledVaultLeft() throws {
        let (sandbox, key) = try Self.sandbox()
        defer { sandbox.cleanUp() }
        let pathFile = sandbox.path("path"), pidFile = sandbox.path("pid")
        let running = try sandbox.start(["exec", "--file", "CERT=api", "--", "sh", "-c",
                                         "echo $$ > '\(pidFile)'; echo \"$CERT\" > '\(pathFile).tmp'; mv '\(pathFile).tmp' '\(pathFile)'; "
                                            + "exec sleep 30 >/dev/null 2>&1"],
                                        environment: key)
        let deadline = Date().addingTimeInterval(20)
        while !FileManager.default.fileExists(atPath: pathFile), Date() < deadline { usleep(10_000) }
        let path = try String(contentsOfFile: pathFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        let child = try String(contentsOfFile: pidFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        kill(running.pid, SIGKILL)
        // The command outlives vault; end it too (it holds the test harness's descriptors).
        if let pid = pid_t(child) { kill(pid, SIGKILL) }
        _ = running.finish(timeout: 20)
        #expect(FileManager.default.fileExists(atPath: path), "a SIGKILL leaves the file")
        let again = try sandbox.run(["exec", "--file", "OTHER=api", "--", "true"], environment: key)
        #expect(again.status == 0)
        #expect(!FileManager.default.fileExists(atPath: path), "the next vault exec --file removed it")
    }

    @Test func anUnsafeRuntimeFolderIsRefused() throws {
        let (sandbox, key) = try Self.sandbox()
        defer { sandbox.cleanUp() }
        let open = sandbox.path("open")
        try FileManager.default.createDirectory(atPath: open + "/vault-exec", withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o777])
        chmod(open + "/vault-exec", 0o777)
        let result = try sandbox.run(["exec", "--file", "CERT=api", "--", "true"], environment: key.merging(["XDG_RUNTIME_DIR": open]) { _, new in new })
        #expect(result.status == 77, "\(result.stderrText)")
    }

    @Test func maskLetsACommandWhoseReaderWentAwayEnd() throws {
        let (sandbox, key) = try Self.sandbox()
        defer { sandbox.cleanUp() }
        // `yes` writes for ever; vault's own output is a pipe closed after the first line.
        let script = "\(try CLIBinary.path()) exec --env A=api --mask -- yes | head -1"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", script]
        process.environment = sandbox.environment.merging(key) { _, new in new }
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(15)
        while process.isRunning, Date() < deadline { usleep(20_000) }
        #expect(!process.isRunning, "the command got SIGPIPE and ended")
        if process.isRunning { process.terminate() }
    }

    @Test func concurrentRunsKeepTheirOwnFolders() throws {
        let (sandbox, key) = try Self.sandbox()
        defer { sandbox.cleanUp() }
        let runs = try (0..<16).map { _ in
            try sandbox.start(["exec", "--file", "F=api", "--", "sh", "-c", "sleep 0.3; cat \"$F\" >/dev/null"], environment: key)
        }
        let statuses = runs.map { $0.finish(timeout: 60).status }
        #expect(statuses.allSatisfy { $0 == 0 }, "\(statuses)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: sandbox.path("runtime") + "/vault-exec").isEmpty)
    }

    @Test func whatTheCommandAddsToItsFolderIsRemovedToo() throws {
        let (sandbox, key) = try Self.sandbox()
        defer { sandbox.cleanUp() }
        let result = try sandbox.run(["exec", "--file", "F=api", "--", "sh", "-c", "mkdir \"$F.d\" && cp \"$F\" \"$F.d/copy\""], environment: key)
        #expect(result.status == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: sandbox.path("runtime") + "/vault-exec").isEmpty)
    }

    @Test func envFileNamesAndValuesAnEnvironmentCannotHoldAreRefused() throws {
        let (sandbox, key) = try Self.sandbox()
        defer { sandbox.cleanUp() }
        let equalsInName = sandbox.privateFile("a.env", "'A=B'=v\n")
        #expect(try sandbox.run(["exec", "--env-file", equalsInName, "--", "true"], environment: key).status == 64)
        let badReference = sandbox.privateFile("b.env", "OK=1\nA=vault://x?other=1\n")
        let result = try sandbox.run(["exec", "--env-file", badReference, "--", "true"], environment: key)
        #expect(result.status == 64)
        #expect(result.stderrText.contains("b.env, line 2"))
    }
}

extension ExecReferenceTests {
    /// Wall-clock bounds: run by scripts/test in a process of their own, one at a time (TimingTests).
    @Suite(.timing, .serialized) struct Timed {
        @Test func maskDoesNotWaitForABackgroundProcessHoldingTheOutput() throws {
            let (sandbox, key) = try ExecReferenceTests.sandbox()
            defer { sandbox.cleanUp() }
            let pathFile = sandbox.path("path")
            let started = Date()
            // The background process keeps the command's output pipe open (and closes the descriptors
            // it inherited beyond it, among them the test harness's own, which would hold the harness).
            let result = try sandbox.run(["exec", "--mask", "--env", "A=api", "--file", "F=api", "--", "sh", "-c",
                                          "echo \"$F\" > '\(pathFile)'; python3 -c 'import os, time; os.closerange(3, 65536); time.sleep(8); print(\"late\")' & "
                                            + "echo \"now $A\""], environment: key, timeout: 30)
            #expect(result.status == 0)
            #expect(Date().timeIntervalSince(started) < 7, "vault returned once the command ended and its output stopped")
            #expect(result.stdoutText.hasPrefix("now <concealed by vault>\n"))
            let path = try String(contentsOfFile: pathFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(!FileManager.default.fileExists(atPath: path))
        }
    }
}
