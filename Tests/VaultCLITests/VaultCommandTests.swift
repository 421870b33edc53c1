#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Testing
import TestScheduling

/// Vault-wide commands and every error path's exit status, through the built binary.
@Suite(.blockingWork) struct VaultCommandTests {
    @Test func wrongKeyFileExits77() throws {
        let (sandbox, _) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let result = try sandbox.run(["list", "--key-file", try sandbox.keyFile("bob.key")])
        #expect(result.status == 77)
        #expect(result.stderrText.lowercased().contains("does not open this vault"))
    }

    @Test func groupReadableVaultExits77() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        #expect(chmod(sandbox.vaultFile, 0o640) == 0)
        let result = try sandbox.run(["list"], environment: key)
        #expect(result.status == 77)
        #expect(result.stderrText.contains("hint: "))
    }

    @Test func noKeySourceWithoutATerminalExits64AtOnce() throws {
        let (sandbox, _) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let started = Date()
        // Standard input is a pipe that stays open: a command that waited for it would hang.
        let running = try sandbox.start(["list"])
        let result = running.finish(timeout: 20)
        #expect(result.status == 64)
        #expect(Date().timeIntervalSince(started) < 10)
        for option in ["--key-file", "--passphrase-file", "VAULT_PASSPHRASE"] {
            #expect(result.stderrText.contains(option), "message names \(option): \(result.stderrText)")
        }
    }

    @Test func tamperedIndexExits65() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        #expect(try sandbox.run(["add", "a"], stdin: Data(text: "value"), environment: key).status == 0)
        try flipByte(at: 200, in: sandbox.vaultFile)
        for command in [["list"], ["get", "a"], ["verify"]] {
            #expect(try sandbox.run(command, environment: key).status == 65, "\(command)")
        }
    }

    @Test func verifyReportsADamagedSecretAndExits65() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        #expect(try sandbox.run(["add", "a"], stdin: Data(text: "value-a"), environment: key).status == 0)
        let intact = try sandbox.run(["verify"], environment: key)
        #expect(intact.status == 0)
        #expect(intact.stdoutText.contains("1 entry checked, all authentic"))
        // Format v3: the values region starts at 210 + index_length (header field at offset 130,
        // big-endian); after its 32-byte salt come the secret's ciphertext, under the layer's key
        // stream (a flipped bit there flips the same bit of the value's own ciphertext).
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: sandbox.vaultFile)))
        #expect(bytes[8] == 3)
        let indexLength = bytes[130..<134].reduce(0) { $0 << 8 | Int($1) }
        try flipByte(at: 210 + indexLength + 32 + 2, in: sandbox.vaultFile)
        let damaged = try sandbox.run(["verify", "--json"], environment: key)
        #expect(damaged.status == 65)
        let report = try #require(try JSONSerialization.jsonObject(with: damaged.stdout) as? [String: Any])
        #expect(report["intact"] as? Bool == false)
        #expect((report["failures"] as? [[String: Any]])?.first?["name"] as? String == "a")
        #expect(try sandbox.run(["get", "a"], environment: key).status == 65)
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/flock"), "needs flock(1) from util-linux"))
    func busyVaultExits75() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let lockPath = (sandbox.vaultDirectory as NSString).appendingPathComponent("secrets.lock")
        // flock(1) holds the lock until its `cat` sees end of file on standard input.
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: "/usr/bin/flock")
        holder.arguments = ["--exclusive", lockPath, "sh", "-c", "echo locked; exec cat"]
        let input = Pipe()
        let output = Pipe()
        holder.standardInput = input
        holder.standardOutput = output
        try holder.run()
        defer {
            try? input.fileHandleForWriting.close()
            holder.waitUntilExit()
        }
        let ready = output.fileHandleForReading.availableData
        #expect(String(decoding: ready, as: UTF8.self).hasPrefix("locked"))
        let started = Date()
        let busy = try sandbox.run(["add", "a", "--lock-timeout", "0.3"], stdin: Data(text: "value"), environment: key)
        #expect(busy.status == 75)
        #expect(busy.stderrText.contains("another process"))
        #expect(Date().timeIntervalSince(started) < 10)
        // Reading needs no lock.
        #expect(try sandbox.run(["list"], environment: key).status == 0)
    }

    @Test func passwdSwitchesToANewKeyFile() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        #expect(try sandbox.run(["add", "a"], stdin: Data(text: "kept"), environment: key).status == 0)
        let bob = try sandbox.keyFile("bob.key")
        #expect(try sandbox.run(["passwd", "--new-key-file", bob], environment: key).status == 0)
        #expect(try sandbox.run(["get", "a"], environment: key).status == 77)
        #expect(try sandbox.run(["get", "a", "--key-file", bob]).stdout == Data(text: "kept"))
        // No new key source and no terminal: usage error, nothing changed.
        let noNewKey = try sandbox.run(["passwd", "--key-file", bob])
        #expect(noNewKey.status == 64)
        #expect(noNewKey.stderrText.contains("--new-key-file"))
    }

    @Test func rotateKeepsEverySecret() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        for name in ["a", "b"] { #expect(try sandbox.run(["add", name], stdin: Data(text: "v-\(name)"), environment: key).status == 0) }
        let before = try Data(contentsOf: URL(fileURLWithPath: sandbox.vaultFile))
        #expect(try sandbox.run(["rotate"], environment: key).status == 0)
        #expect(try Data(contentsOf: URL(fileURLWithPath: sandbox.vaultFile)) != before)
        #expect(try sandbox.run(["get", "b"], environment: key).stdout == Data(text: "v-b"))
        #expect(try sandbox.run(["verify"], environment: key).status == 0)
    }

    @Test func wipeNeedsYesWithoutATerminalAndThenDestroysTheVault() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        #expect(try sandbox.run(["add", "a"], stdin: Data(text: "v"), environment: key).status == 0)
        let refused = try sandbox.run(["wipe"])
        #expect(refused.status == 64)
        #expect(refused.stderrText.contains("--yes"))
        #expect(FileManager.default.fileExists(atPath: sandbox.vaultFile))
        let profile = (sandbox.vaultDirectory as NSString).appendingPathComponent("profile.json")
        _ = FileManager.default.createFile(atPath: profile, contents: Data(text: "{}"), attributes: [.posixPermissions: 0o600])
        // No key needed: a vault whose passphrase is lost can still be destroyed.
        #expect(try sandbox.run(["wipe", "--yes"]).status == 0)
        #expect(!FileManager.default.fileExists(atPath: sandbox.vaultFile))
        #expect(FileManager.default.fileExists(atPath: profile))
        #expect(try sandbox.run(["list"], environment: key).status == 66)
        #expect(try sandbox.run(["wipe", "--yes", "--all"]).status == 0)
        #expect(!FileManager.default.fileExists(atPath: profile))
        #expect(try sandbox.run(["wipe", "--yes", "--all"]).status == 66)
    }

    @Test func passphraseFromTheEnvironmentOpensTheVault() throws {
        let sandbox = try CLISandbox()
        defer { sandbox.cleanUp() }
        let passphrase = ["VAULT_PASSPHRASE": "correct horse battery staple"]
        #expect(try sandbox.run(["init"], environment: passphrase).status == 0)
        #expect(try sandbox.run(["add", "a"], stdin: Data(text: "pass-secret"), environment: passphrase).status == 0)
        #expect(try sandbox.run(["get", "a"], environment: passphrase).stdout == Data(text: "pass-secret"))
        #expect(try sandbox.run(["get", "a"], environment: ["VAULT_PASSPHRASE": "wrong"]).status == 77)
    }

    @Test func passphraseFileOpensTheVaultAndIgnoresOneTrailingNewline() throws {
        let sandbox = try CLISandbox()
        defer { sandbox.cleanUp() }
        let file = sandbox.privateFile("pass", "open sesame now\n")
        #expect(try sandbox.run(["init", "--passphrase-file", file]).status == 0)
        #expect(try sandbox.run(["add", "a", "--passphrase-file", file], stdin: Data(text: "v"), environment: [:]).status == 0)
        // The same passphrase from the environment, without the newline, opens it too.
        let list = try sandbox.run(["list", "--json"], environment: ["VAULT_PASSPHRASE": "open sesame now"])
        #expect(list.status == 0)
        let loose = sandbox.privateFile("loose", "open sesame now")
        #expect(chmod(loose, 0o644) == 0)
        #expect(try sandbox.run(["list", "--passphrase-file", loose]).status == 77)
    }

    func flipByte(at offset: Int, in path: String) throws {
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        try #require(bytes.indices.contains(offset), "offset \(offset) is inside the \(bytes.count)-byte file")
        bytes[offset] ^= 0x01
        let handle = try #require(FileHandle(forWritingAtPath: path))
        try handle.write(contentsOf: bytes)
        try handle.close()
    }
}
