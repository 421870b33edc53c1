import CredentialVault
import Foundation
import OAuthServerSupport
import Testing
import TestScheduling
import VaultCrypto

/// Issue 36 point 8: `vault signin --browser` run by an unprivileged user answers only that
/// user's processes. Another uid's request to the loopback listener (the start address, or a
/// callback carrying the right `state` and a real code) gets 403 and the sign-in keeps waiting;
/// the same uid's callback completes it. The browser is started with the loopback address, never
/// with the authorization URL.
@Suite("the browser sign-in's loopback listener answers the signing-in user only", .blockingWork,
       .enabled(if: OAuthServer.shouldRun && geteuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")
                && FileManager.default.isExecutableFile(atPath: "/usr/bin/python3")))
struct LoopbackUserTests {
    /// The signing-in user and another local user (no passwd entries needed).
    static let user: uid_t = 65534
    static let other: uid_t = 65533

    /// GETs `url` without following a redirect; prints the status (0 when nothing answered).
    static let get = """
        import sys, urllib.request, urllib.error
        class Stay(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *args): return None
        try:
            print(urllib.request.build_opener(Stay()).open(sys.argv[1], timeout=20).status)
        except urllib.error.HTTPError as error:
            print(error.code)
        except OSError:
            print(0)
        """

    /// A process run as `uid` (setpriv), with `environment` only.
    static func process(as uid: uid_t, _ command: [String], environment: [String: String]) -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        process.arguments = ["--reuid=\(uid)", "--regid=\(uid)", "--clear-groups", "--"] + command
        process.environment = environment
        return process
    }

    /// Runs `command` as `uid` to its end. - Returns: its exit status and standard output.
    static func run(as uid: uid_t, _ command: [String], environment: [String: String]) throws -> (Int32, String) {
        let process = process(as: uid, command, environment: environment)
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }

    @Test("another uid's callback (right state, a real code) and start request get 403 and the sign-in waits; the user's own callback signs in")
    func anotherUsersCallbackIsRefused() throws {
        let server = try OAuthServer.require()
        let home = NSTemporaryDirectory() + "vault-loopback-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: home + "/server", withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(atPath: home) }
        // What the user's browser needs of the server (scripts/test-browser reads server.json and the password).
        var facts = server.facts
        let password = try String(contentsOfFile: try server.string("password_file"), encoding: .utf8)
        try Data(password.utf8).write(to: URL(fileURLWithPath: home + "/server/alice.password"))
        facts["password_file"] = .string(home + "/server/alice.password")
        try Data(try JSONValue.object(facts).serialized()).write(to: URL(fileURLWithPath: home + "/server/server.json"))
        try VaultKey.generateKeyFile(path: home + "/test.key")
        for path in [home, home + "/server", home + "/server/alice.password", home + "/server/server.json", home + "/test.key"] {
            #expect(chown(path, Self.user, Self.user) == 0)
        }
        let environment = ["HOME": home, "PATH": "/usr/bin:/bin", "VAULT_DIR": home + "/vault", "VAULT_KEY_FILE": home + "/test.key",
                           "VAULT_OAUTH_SERVER": home + "/server", "VAULT_TEST_BROWSER_LOG": home + "/browser.log"]
        let vault = try BuiltProducts.path(of: "vault")
        #expect(try Self.run(as: Self.user, [vault, "init"], environment: environment).0 == 0)

        // The user signs in; vault prints the addresses and waits.
        let signin = Self.process(as: Self.user, [vault, "signin", "--browser", "--no-open", "--issuer", try server.issuer.absoluteString,
                                                  "--client-id", try server.string("browser_client_id"), "--scope", "read", "--wait", "90s"],
                                  environment: environment)
        let stderr = Pipe()
        let collected = Collected()
        signin.standardError = stderr
        signin.standardOutput = FileHandle.nullDevice
        try signin.run()
        // A thread of its own reads it (PipeReader: a `readabilityHandler` can crash the test process).
        let errors = PipeReader(stderr.fileHandleForReading) { _ = collected.append($0) }
        defer { if signin.isRunning { signin.terminate() } }
        var start: String?
        for _ in 0..<300 where start == nil {
            start = collected.append(Data()).firstMatch(of: /on this computer, (http:\/\/127\.0\.0\.1:[0-9]+\/signin)\)/).map { String($0.1) }
            if start == nil { Thread.sleep(forTimeInterval: 0.1) }
        }
        let startURL = try #require(start, "\(collected.append(Data()))")

        // Another uid asking for the start address (which redirects to the authorization URL) is refused.
        #expect(try Self.run(as: Self.other, ["/usr/bin/python3", "-c", Self.get, startURL], environment: environment).1 == "403")
        // The user's browser: logs in at the server and keeps the callback (state and a real code) instead of delivering it.
        let saved = home + "/callback"
        let browser = try Self.run(as: Self.user, ["/usr/bin/python3", OAuthServer.repositoryRoot + "/scripts/test-browser", startURL],
                                   environment: environment.merging(["VAULT_TEST_BROWSER": "save-callback=\(saved)"]) { $1 })
        #expect(browser.0 == 0)
        let callback = try String(contentsOfFile: saved, encoding: .utf8)
        #expect(callback.contains("state=") && callback.contains("code="))
        // Another uid delivers it first: refused, and the sign-in goes on waiting.
        #expect(try Self.run(as: Self.other, ["/usr/bin/python3", "-c", Self.get, callback], environment: environment).1 == "403")
        #expect(signin.isRunning, "the sign-in still waits: \(collected.append(Data()))")
        // The user's own delivery signs in.
        #expect(try Self.run(as: Self.user, ["/usr/bin/python3", "-c", Self.get, callback], environment: environment).1 == "200")
        signin.waitUntilExit()
        _ = errors.waitUntilFinished()
        #expect(signin.terminationStatus == 0, "\(collected.append(Data()))")
        let status = try Self.run(as: Self.user, [vault, "status", "--json"], environment: environment)
        guard case .object(let members) = try JSONValue(parsing: Array(status.1.utf8)) else {
            Issue.record("not JSON: \(status.1)")
            return
        }
        #expect(members["userId"]?.stringValue == (try server.userID))
    }
}
