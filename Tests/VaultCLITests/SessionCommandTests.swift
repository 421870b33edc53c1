import Foundation
import Testing
import TestScheduling

/// The session commands, driven through the built `vault` binary.
@Suite(.blockingWork) struct SessionCommandTests {
    static func json(_ result: CLIResult) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any], "not a JSON object: \(result.stdoutText)")
    }

    static func tokenResponse(_ name: String) throws -> Data {
        try Data(contentsOf: CLIFixtures.root.appendingPathComponent("token-responses/\(name).json"))
    }

    @Test func statusOfAFreshInstallIsGuestWithTheDocumentedShape() throws {
        let sandbox = try CLISandbox()
        defer { sandbox.cleanUp() }
        let first = try sandbox.run(["status", "--json"])
        #expect(first.status == 0)
        let object = try Self.json(first)
        for key in ["state", "anonymousId", "userId", "expiresAt", "reason"] { #expect(object.keys.contains(key), "missing \(key)") }
        #expect(object["state"] as? String == "guest")
        #expect(object["userId"] is NSNull)
        // status only reads: before anything made one, there is no anonymous id.
        #expect(object["anonymousId"] is NSNull)
        let guest = try sandbox.run(["guest"])
        #expect(guest.status == 0, "\(guest.stderrText)")
        let anonymousID = guest.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(try Self.json(sandbox.run(["status", "--json"]))["anonymousId"] as? String == anonymousID)
        #expect(try Self.json(sandbox.run(["status", "--json"]))["anonymousId"] as? String == anonymousID)
    }

    @Test func signinFromATokenResponseUpgradesTheGuestAndMigratesItems() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let anonymousID = try sandbox.run(["guest"], environment: key).stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(try sandbox.run(["add", "cart", "--guest"], stdin: Data("beans".utf8), environment: key).status == 0)
        #expect(try sandbox.run(["add", "coins", "--guest", "--non-transferable"], stdin: Data("7".utf8), environment: key).status == 0)

        let signin = try sandbox.run(["signin", "--user-id", "user-1234", "--name", "Alice", "--json"],
                                     stdin: Self.tokenResponse("full"), environment: key)
        #expect(signin.status == 0, "\(signin.stderrText)")
        let report = try Self.json(signin)
        #expect(report["anonymousId"] as? String == anonymousID)
        #expect(report["moved"] as? [String] == ["cart"])
        #expect(report["stayed"] as? [String] == ["coins"])

        let status = try Self.json(sandbox.run(["status", "--json"], environment: key))
        #expect(status["state"] as? String == "needsOnboarding")
        #expect(status["userId"] as? String == "user-1234")
        #expect(status["displayName"] as? String == "Alice")
        #expect(status["expiresAt"] is String)
        #expect(status["hasRefreshToken"] as? Bool == true)

        let token = try sandbox.run(["token"], environment: key)
        #expect(token.status == 0)
        #expect(token.stdoutText.hasPrefix("eyJhbGciOiJSUzI1NiIs"))
        #expect(!signin.stdoutText.contains("fake-refresh-token"))
        #expect(!status.description.contains("fake-refresh-token"))
    }

    @Test func signinRefusesATerminalOrMalformedInput() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let bad = try sandbox.run(["signin", "--user-id", "u1"], stdin: Data(#"{"token_type":"Bearer"}"#.utf8), environment: key)
        #expect(bad.status == 64)
        #expect(bad.stderrText.contains("access_token"))
        let empty = try sandbox.run(["signin", "--user-id", "u1"], stdin: Data(), environment: key)
        #expect(empty.status == 64)
        #expect(empty.stderrText.contains("standard input is empty"))
        #expect(empty.stderrText.contains("hint: "))
        #expect(try Self.json(sandbox.run(["status", "--json"], environment: key))["state"] as? String == "guest")
    }

    @Test func signoutReturnsToTheSameGuestAndShredsTheTokens() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let anonymousID = try sandbox.run(["guest"], environment: key).stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(try sandbox.run(["signin", "--user-id", "u1", "--onboarded"], stdin: Self.tokenResponse("minimal"), environment: key).status == 0)
        #expect(try Self.json(sandbox.run(["status", "--json"], environment: key))["state"] as? String == "signedIn")
        let signout = try sandbox.run(["signout"], environment: key)
        #expect(signout.status == 0)
        #expect(signout.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines) == anonymousID)
        #expect(try Self.json(sandbox.run(["status", "--json"], environment: key))["state"] as? String == "guest")
        let list = try sandbox.run(["list", "--json", "--owner", "user:u1"], environment: key)
        #expect(list.status == 0)
        #expect((try JSONSerialization.jsonObject(with: list.stdout) as? [Any])?.isEmpty == true)
        #expect(try sandbox.run(["token"], environment: key).status == 66)
    }

    @Test func secondUserCannotSignInOverTheFirst() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        #expect(try sandbox.run(["signin", "--user-id", "u1"], stdin: Self.tokenResponse("minimal"), environment: key).status == 0)
        let second = try sandbox.run(["signin", "--user-id", "u2"], stdin: Self.tokenResponse("minimal"), environment: key)
        #expect(second.status == 73)
        #expect(second.stderrText.contains("signout"))
    }

    @Test func statusOfATamperedVaultIsUnavailableWithExit65() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        #expect(try sandbox.run(["signin", "--user-id", "u1"], stdin: Self.tokenResponse("minimal"), environment: key).status == 0)
        var bytes = try Data(contentsOf: URL(fileURLWithPath: sandbox.vaultFile))
        bytes[400] ^= 0x01
        try bytes.write(to: URL(fileURLWithPath: sandbox.vaultFile))
        chmod(sandbox.vaultFile, 0o600)
        let status = try sandbox.run(["status", "--json"], environment: key)
        #expect(status.status == 65)
        let object = try Self.json(status)
        #expect(object["state"] as? String == "unavailable")
        #expect(object["reason"] as? String == "corrupt")
    }

    @Test func statusWithoutAKeyForAnExistingVaultIsLocked() throws {
        let (sandbox, _) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let status = try sandbox.run(["status", "--json"])
        #expect(status.status == 77)
        #expect(try Self.json(status)["reason"] as? String == "locked")
    }

    @Test func demoWalksThroughASessionAndCleansUp() throws {
        let sandbox = try CLISandbox()
        defer { sandbox.cleanUp() }
        try FileManager.default.createDirectory(atPath: sandbox.path("tmp"), withIntermediateDirectories: true)
        let demo = try sandbox.run(["demo"], environment: ["TMPDIR": sandbox.path("tmp") + "/"], timeout: 120)
        #expect(demo.status == 0, "\(demo.stdoutText)\n\(demo.stderrText)")
        for text in ["state         guest", "moved              cart", "stayed with guest  coins", "state          signedIn",
                     "\"state\": \"expired\"", "Signed out 'u-1001'", "Done. Removed"] {
            #expect(demo.stdoutText.contains(text), "demo output lacks \(text)")
        }
        #expect(!demo.stdoutText.contains("demo-refresh-token"))
        let leftovers = (try? FileManager.default.contentsOfDirectory(atPath: sandbox.path("tmp"))) ?? []
        #expect(leftovers.isEmpty, "demo left \(leftovers)")
        // Nor in HOME (the steps' rollback memory stays in the throwaway folder).
        #expect(try FileManager.default.contentsOfDirectory(atPath: sandbox.root) == ["tmp"])
    }
}
