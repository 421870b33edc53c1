#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Testing
import TestScheduling

/// A system service's key from systemd credentials: the shape systemd gives a `User=` service
/// (root-owned, 0400, an ACL for the service's user) is accepted inside `$CREDENTIALS_DIRECTORY`
/// only, proven as a non-root user; and a key sealed with the real `systemd-creds encrypt` (under a
/// host key of the test's own, never the machine's) opens the vault once decrypted.
@Suite(.blockingWork, .serialized) struct SystemdCredentialTests {
    static let serviceUID: UInt32 = 65534

    static var canSwitchUser: Bool {
        geteuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")
            && FileManager.default.isExecutableFile(atPath: "/usr/bin/python3")
    }

    /// Sets the file's access ACL: owner r, the given users r, nothing for group and others, mask r.
    static func setACL(_ path: String, readers: [UInt32]) throws {
        let script = """
            import os, struct, sys
            entries = [struct.pack("<HHI", 0x01, 4, 0xFFFFFFFF)]
            entries += [struct.pack("<HHI", 0x02, 4, int(uid)) for uid in sys.argv[2:]]
            entries += [struct.pack("<HHI", 0x04, 0, 0xFFFFFFFF), struct.pack("<HHI", 0x10, 4, 0xFFFFFFFF),
                        struct.pack("<HHI", 0x20, 0, 0xFFFFFFFF)]
            os.setxattr(sys.argv[1], "system.posix_acl_access", struct.pack("<I", 2) + b"".join(entries))
            """
        let result = try ExternalProcess.run("/usr/bin/python3", ["-c", script, path] + readers.map(String.init),
                                             environment: [:], stdin: Data(), timeout: 30)
        guard result.status == 0 else { throw CLITestFailure("setxattr: \(result.stderrText)") }
    }

    /// Runs vault as the service's user.
    static func asService(_ arguments: [String], stdin: Data = Data(), environment: [String: String]) throws -> CLIResult {
        try ExternalProcess.run("/usr/bin/setpriv", ["--reuid=\(serviceUID)", "--regid=\(serviceUID)", "--clear-groups",
                                                     try CLIBinary.path()] + arguments,
                                environment: environment, stdin: stdin, timeout: 60)
    }

    @Test(.enabled(if: SystemdCredentialTests.canSwitchUser))
    func aUserServiceReadsTheCredentialSystemdGaveIt() throws {
        let sandbox = try CLISandbox()
        defer { sandbox.cleanUp() }
        chmod(sandbox.root, 0o755)
        let home = sandbox.path("home"), credentials = sandbox.path("credentials")
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        chown(home, Self.serviceUID, Self.serviceUID)
        try FileManager.default.createDirectory(atPath: credentials, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o755])
        let key = credentials + "/vault.key"
        #expect(try sandbox.run(["keygen", key]).status == 0)
        chmod(key, 0o400)
        try Self.setACL(key, readers: [Self.serviceUID])
        let mode = try #require(try FileManager.default.attributesOfItem(atPath: key)[.posixPermissions] as? Int)
        #expect(mode == 0o440, "the ACL's mask shows as group read, as on a real credential")
        var environment = ["HOME": home, "VAULT_DIR": home + "/vault", "CREDENTIALS_DIRECTORY": credentials, "PATH": "/usr/bin:/bin"]
        let initialised = try Self.asService(["init", "--key-file", key], environment: environment)
        #expect(initialised.status == 0, "\(initialised.stderrText)")
        #expect(try Self.asService(["add", "db"], stdin: Data(text: "service-secret"), environment: environment.merging(["VAULT_KEY_FILE": key]) { _, new in new }).status == 0)
        let got = try Self.asService(["get", "db", "--key-file", key], environment: environment)
        #expect(got.stdoutText == "service-secret")

        // The same file anywhere but in $CREDENTIALS_DIRECTORY: refused, as any file of root's.
        environment["CREDENTIALS_DIRECTORY"] = nil
        #expect(try Self.asService(["get", "db", "--key-file", key], environment: environment).status == 77)
        environment["CREDENTIALS_DIRECTORY"] = credentials
        // An ACL that lets another user read it too: refused.
        try Self.setACL(key, readers: [Self.serviceUID, 12345])
        let shared = try Self.asService(["get", "db", "--key-file", key], environment: environment)
        #expect(shared.status == 77, "\(shared.stderrText)")
        // Writable by the group (no ACL can excuse it): refused.
        try Self.setACL(key, readers: [Self.serviceUID])
        chmod(key, 0o460)
        #expect(try Self.asService(["get", "db", "--key-file", key], environment: environment).status == 77)
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-creds")))
    func aKeySealedWithSystemdCredsOpensTheVault() throws {
        let sandbox = try CLISandbox()
        defer { sandbox.cleanUp() }
        // The test's own host key: systemd-creds reads $SYSTEMD_CREDENTIAL_SECRET instead of the machine's.
        let secret = sandbox.path("host.secret")
        FileManager.default.createFile(atPath: secret, contents: Data((0..<4096).map { _ in UInt8.random(in: 0...255) }),
                                       attributes: [.posixPermissions: 0o400])
        let environment = sandbox.environment.merging(["SYSTEMD_CREDENTIAL_SECRET": secret]) { _, new in new }
        let key = sandbox.path("vault.key"), sealed = sandbox.path("vault.key.cred")
        #expect(try sandbox.run(["keygen", key]).status == 0)
        #expect(try sandbox.run(["init", "--key-file", key]).status == 0)
        #expect(try sandbox.run(["add", "api", "--key-file", key], stdin: Data(text: "sealed-secret")).status == 0)
        let encrypted = try ExternalProcess.run("/usr/bin/systemd-creds", ["encrypt", "--with-key=host", "--name=vault.key", key, sealed],
                                                environment: environment, stdin: Data(), timeout: 60)
        #expect(encrypted.status == 0, "\(encrypted.stderrText)")
        try FileManager.default.removeItem(atPath: key)
        #expect(!(try Data(contentsOf: URL(fileURLWithPath: sealed))).isEmpty)
        let credentials = sandbox.path("credentials")
        try FileManager.default.createDirectory(atPath: credentials, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        let decrypted = try ExternalProcess.run("/usr/bin/systemd-creds", ["decrypt", "--name=vault.key", sealed, "-"],
                                                environment: environment, stdin: Data(), timeout: 60)
        #expect(decrypted.status == 0, "\(decrypted.stderrText)")
        #expect(decrypted.stdout.count == 32)
        let opened = credentials + "/vault.key"
        FileManager.default.createFile(atPath: opened, contents: decrypted.stdout, attributes: [.posixPermissions: 0o400])
        let got = try sandbox.run(["get", "api", "--key-file", opened], environment: ["CREDENTIALS_DIRECTORY": credentials])
        #expect(got.stdoutText == "sealed-secret", "\(got.stderrText)")
    }
}
