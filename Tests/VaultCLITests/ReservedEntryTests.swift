#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CredentialVault
import Foundation
import Testing
import TestScheduling

/// Issue 36 point 10: the `session.*` entries (and the pending revocations' owner) belong to the
/// session. `add`, `import` and `rm` refuse them (64, nothing written), `get`, `exec`, `inject` and
/// references do not hand them out, and the agent refuses them to requests that are not the
/// session's own; the session's own reads and writes keep working.
@Suite(.blockingWork) struct ReservedEntryTests {
    static let clientSecret = "client-secret-\(UUID().uuidString)"
    static let plantedClient = #"{"clientId":"app","tokenEndpoint":"https://attacker.test/token","authMethod":"client_secret_basic"}"#

    /// A vault with a signed-in user (`u1`) and a confidential OAuth client whose secret is `clientSecret`.
    static func vaultWithSessionAndClient() throws -> (CLISandbox, [String: String]) {
        let (sandbox, key) = try CLISandbox.withVault()
        let response = #"{"access_token":"at-1","token_type":"Bearer","expires_in":3600,"refresh_token":"rt-1"}"#
        let signedIn = try sandbox.run(["signin", "--user-id", "u1"], stdin: Data(response.utf8), environment: key)
        guard signedIn.status == 0 else { throw CLITestFailure("signin failed: \(signedIn.stderrText)") }
        let client = try sandbox.run(["client", "--issuer", "http://127.0.0.1:9", "--token-endpoint", "http://127.0.0.1:9/token",
                                      "--client-id", "app", "--auth", "basic"], stdin: Data(text: clientSecret), environment: key)
        guard client.status == 0 else { throw CLITestFailure("client failed: \(client.stderrText)") }
        return (sandbox, key)
    }

    static func vaultFile(_ sandbox: CLISandbox) throws -> Data {
        try Data(contentsOf: URL(fileURLWithPath: sandbox.vaultFile))
    }

    @Test(arguments: [true, false])
    func anImportedDotEnvCannotPlantTheOAuthClient(replace: Bool) throws {
        // With --replace into a vault that has a client; without it into a vault that has none.
        let (sandbox, key) = replace ? try Self.vaultWithSessionAndClient() : try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let before = try Self.vaultFile(sandbox)
        let source = sandbox.privateFile("planted.env", """
            API=fine
            session.oauth-client='\(Self.plantedClient)'
            session.oauth-client-secret=stolen
            """)
        let result = try sandbox.run(["import", "--from", "dotenv", source, "--json"] + (replace ? ["--replace"] : []), environment: key)
        #expect(result.status == 64, "\(result.stderrText)")
        #expect(result.stderrText.contains("reserved"))
        #expect(try Self.vaultFile(sandbox) == before, "nothing was written")
        let report = try #require(try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any])
        #expect(Set(report["invalid"] as? [String] ?? []) == ["session.oauth-client", "session.oauth-client-secret"])

        // --skip-invalid imports the rest, never the session's names.
        let skipped = try sandbox.run(["import", "--from", "dotenv", source, "--skip-invalid"] + (replace ? ["--replace"] : []), environment: key)
        #expect(skipped.status == 0, "\(skipped.stderrText)")
        let list = try sandbox.run(["list", "--json"], environment: key)
        let names = ((try JSONSerialization.jsonObject(with: list.stdout) as? [[String: Any]]) ?? []).compactMap { $0["name"] as? String }
        #expect(names.contains("API"))
        if !replace { #expect(!names.contains { $0.hasPrefix("session.") }, "\(names)") }
    }

    @Test func anImportedKeePassXCTitleCannotPlantTheOAuthClient() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let before = try Self.vaultFile(sandbox)
        let source = sandbox.privateFile("export.csv", """
            "Group","Title","Username","Password","URL","Notes","TOTP","Icon","Last Modified","Created"
            "Root","session.oauth-client","","\(Self.plantedClient.replacingOccurrences(of: "\"", with: "\"\""))","","","","0","",""
            "Root/Work","mail","me","pw","","","","0","",""
            """)
        let result = try sandbox.run(["import", "--from", "keepassxc-csv", source], environment: key)
        #expect(result.status == 64, "\(result.stderrText)")
        #expect(result.stderrText.contains("session.oauth-client"))
        #expect(result.stderrText.contains("reserved"))
        #expect(try Self.vaultFile(sandbox) == before, "nothing was written")
    }

    @Test func addRmGetExecAndInjectRefuseTheSessionsEntries() throws {
        let (sandbox, key) = try Self.vaultWithSessionAndClient()
        defer { sandbox.cleanUp() }
        let before = try Self.vaultFile(sandbox)
        let marker = sandbox.path("ran")
        let runtime = sandbox.path("runtime")
        try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        let environment = key.merging(["XDG_RUNTIME_DIR": runtime]) { _, new in new }
        let command = ["--", "sh", "-c", ": > '\(marker)'; printf '%s' \"$T\""]
        let envFile = sandbox.privateFile("app.env", "T=vault://session.oauth-client-secret\n")
        let template = sandbox.privateFile("config.tpl", "secret: {{ vault://session.refresh-token?owner=user:u1 }}\n")
        let refused: [[String]] = [
            ["add", "session.oauth-client", "--replace"],
            ["add", "session.oauth-dpop-key"],
            ["add", "session.access-token", "--owner", "user:u1", "--replace"],
            ["add", "planted", "--owner", "revocation:pending"],
            ["rm", "session.oauth-client"],
            ["rm", "session.refresh-token", "--owner", "user:u1"],
            ["get", "session.oauth-client-secret"],
            ["get", "session.oauth-dpop-key"],
            ["get", "session.oauth-client"],
            ["get", "session.refresh-token", "--owner", "user:u1"],
            ["get", "anything", "--owner", "revocation:pending"],
            ["exec", "--env", "T=session.oauth-client-secret"] + command,
            ["exec", "--env", "T=vault://session.access-token?owner=user:u1"] + command,
            ["exec", "--env-file", envFile] + command,
            ["exec", "--file", "T=session.oauth-client-secret"] + command,
            ["inject", "-i", template],
        ]
        for arguments in refused {
            let result = try sandbox.run(arguments, stdin: Data(text: Self.plantedClient), environment: environment)
            #expect(result.status == 64, "\(arguments): \(result.stderrText)")
            #expect(result.stderrText.contains("reserved"), "\(arguments): \(result.stderrText)")
            #expect(result.stdout.isEmpty, "\(arguments) printed something")
            for secret in [Self.clientSecret, "rt-1", "at-1"] {
                #expect(!result.stderr.contains(Data(text: secret)), "\(arguments) leaked a secret")
            }
        }
        #expect(!FileManager.default.fileExists(atPath: marker), "no command ran")
        #expect(try Self.vaultFile(sandbox) == before, "nothing was written")
        // What the session needs still works: the stored client is read (and so is its secret).
        let client = try sandbox.run(["client", "--issuer", "http://127.0.0.1:9", "--token-endpoint", "http://127.0.0.1:9/token",
                                      "--client-id", "app2", "--auth", "basic"], stdin: Data(text: Self.clientSecret), environment: key)
        #expect(client.status == 0, "\(client.stderrText)")
        let status = try sandbox.run(["status", "--json"], environment: key)
        #expect(status.status == 0, "\(status.stderrText)")
        #expect(status.stdoutText.contains("u1"))
        // inspect shows metadata, never the secret, and stays allowed.
        let inspect = try sandbox.run(["inspect", "session.oauth-client-secret"], environment: key)
        #expect(inspect.status == 0, "\(inspect.stderrText)")
        #expect(!inspect.stdout.contains(Data(text: Self.clientSecret)))
    }

    /// Through the agent: the CLI refuses as without it; a plain agent request (the public
    /// `VaultAgentClient` calls, what `vault get/add/rm` send) is refused by the agent itself; the
    /// session's marked requests work (`vault token` through the agent: AgentTokenCLITests).
    @Test func theAgentRefusesThePlainRequestsAndServesTheSessions() throws {
        let world = try AgentCommandTests.World()
        defer { _ = world.stop(); world.sandbox.cleanUp() }
        let client = try world.vault(["client", "--no-agent", "--issuer", "http://127.0.0.1:9", "--token-endpoint", "http://127.0.0.1:9/token",
                                      "--client-id", "app", "--auth", "basic"], stdin: Data(text: Self.clientSecret),
                                     environment: ["VAULT_PASSPHRASE": AgentCommandTests.passphrase])
        #expect(client.status == 0, "\(client.stderrText)")
        try world.unlock()
        #expect(try world.vault(["get", "session.oauth-client-secret"]).status == 64)

        let agent = VaultAgentClient(socketPath: world.socket)
        let directory = world.sandbox.vaultDirectory
        func expectRefused(_ body: () throws -> Void) {
            do {
                try body()
                Issue.record("the agent served a plain request for a reserved entry")
            } catch let error as VaultError {
                #expect(error.code == .invalidInput && error.message.contains("reserved"), "\(error)")
            } catch {
                Issue.record("unexpected \(error)")
            }
        }
        expectRefused { _ = try agent.entry(named: "session.oauth-client-secret", directory: directory) }
        expectRefused { _ = try agent.entries(named: ["session.oauth-client-secret"], owner: "", directory: directory) }
        expectRefused {
            _ = try agent.store([NewEntry(name: "session.oauth-client", secret: SecureBytes(copying: Array(Self.plantedClient.utf8)))],
                                replace: true, directory: directory)
        }
        expectRefused { try agent.remove(named: "session.oauth-client", directory: directory) }
        expectRefused { try agent.remove(names: ["session.oauth-client"], owner: "", rotatingDataKey: false, directory: directory) }

        // The session's own (marked) request is served.
        let secret = try agent.forSession().entry(named: "session.oauth-client-secret", directory: directory).secret
        #expect(secret == SecureBytes(copying: Array(Self.clientSecret.utf8)))
        // Nothing was planted: the stored client still sends to its own endpoint.
        let sealed = try agent.forSession().entry(named: "session.oauth-client", directory: directory).secret
        #expect(!sealed.withUnsafeBytes { Data($0) }.contains(Data(text: "attacker")))
    }
}
