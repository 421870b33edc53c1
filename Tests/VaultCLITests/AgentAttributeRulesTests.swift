#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
import TestScheduling

/// `attributes` rules on the agent's socket: the handler looks up the stored entry's attributes
/// (the new entry's for add), so a rule written for Secret Service items holds for `vault get` too.
@Suite(.blockingWork, .serialized) struct AgentAttributeRulesTests {
    static let rules = """
        { "rules": [
            { "name": "nobody reads git passwords", "action": "deny", "operations": ["get"],
              "attributes": { "xdg:schema": "org.git.Password" } },
            { "name": "no new items of the example schema", "action": "deny", "operations": ["add"],
              "attributes": { "xdg:schema": "org.example.*" } }
        ] }
        """

    @Test func attributesRulesMatchSocketRequestsOnTheStoredAttributes() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        for folder in ["agent", "config/vault"] {
            try FileManager.default.createDirectory(atPath: sandbox.path(folder), withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        }
        _ = sandbox.privateFile("config/vault/agent.json", Self.rules)
        let socket = sandbox.path("agent/agent.sock")
        let agent = try sandbox.start(["agent"], environment: ["VAULT_AGENT_SOCK": socket, "XDG_CONFIG_HOME": sandbox.path("config")])
        defer {
            kill(agent.pid, SIGTERM)
            _ = agent.finish(timeout: 20)
        }
        let withAgent = key.merging(["VAULT_AGENT_SOCK": socket]) { _, new in new }
        let deadline = Date().addingTimeInterval(20)
        var unlocked = false
        while !unlocked, Date() < deadline {
            unlocked = try sandbox.run(["unlock"], environment: withAgent).status == 0
            if !unlocked { usleep(20_000) }
        }
        try #require(unlocked)
        let keyless = ["VAULT_AGENT_SOCK": socket, "VAULT_KEY_FILE": ""]
        let git = try sandbox.run(["add", "git-item", "--attribute", "xdg:schema=org.git.Password", "--attribute", "server=example.test"],
                                  stdin: Data("git-secret".utf8), environment: keyless)
        #expect(git.status == 0, "\(git.stderrText)")
        #expect(try sandbox.run(["add", "plain"], stdin: Data("plain-secret".utf8), environment: keyless).status == 0)

        let refused = try sandbox.run(["get", "git-item"], environment: keyless)
        #expect(refused.status == 77, "\(refused.stderrText)")
        #expect(refused.stderrText.contains("nobody reads git passwords"))
        #expect(!refused.stdout.contains(Data("git-secret".utf8)))
        #expect(try sandbox.run(["get", "plain"], environment: keyless).stdoutText == "plain-secret", "an entry without the attribute")
        #expect(try sandbox.run(["list"], environment: keyless).stdoutText.contains("git-item"), "list is not a get")
        #expect(try sandbox.run(["get", "missing"], environment: keyless).status == 66, "a missing entry is still not found")

        let added = try sandbox.run(["add", "example", "--attribute", "xdg:schema=org.example.Thing"], stdin: Data("x".utf8), environment: keyless)
        #expect(added.status == 77, "the new entry's attributes decide an add: \(added.stderrText)")
        #expect(added.stderrText.contains("no new items of the example schema"))
    }
}
