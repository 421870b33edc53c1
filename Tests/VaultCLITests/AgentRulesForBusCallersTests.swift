import CredentialVault
import Foundation
import Testing
@testable import VaultCLI

/// The rules conditions written for Secret Service callers (issue 37): `attributes` (the entry's
/// attributes, known for a D-Bus request, unknown for a socket request) and `programs` (the caller's
/// own executable), read from a real rules file and matched in the file's order.
@Suite struct AgentRulesForBusCallersTests {
    /// The issue's example: only git's libsecret helper reads git's passwords; Python reads nothing.
    static let documented = """
        { "rules": [
            { "name": "python reads nothing", "action": "deny", "operations": ["get"], "programs": ["/usr/bin/python3*"] },
            { "name": "git's helper reads git passwords", "action": "allow", "operations": ["get"],
              "programs": ["*/git-credential-libsecret"], "attributes": { "xdg:schema": "org.git.Password" } },
            { "name": "nobody else reads git passwords", "action": "deny", "operations": ["get"],
              "attributes": { "xdg:schema": "org.git.Password" } }
        ] }
        """

    static let gitPassword = ["xdg:schema": "org.git.Password", "server": "example.test", "protocol": "https"]

    /// Writes `text` as the rules file in a private folder and loads it.
    static func load(_ text: String) throws -> AgentRules? {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("rules-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/agent.json"
        #expect(FileManager.default.createFile(atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600]))
        return try AgentRules.load(path)
    }

    /// The error loading `text` gives.
    static func loadError(_ text: String) -> VaultError? {
        do {
            _ = try load(text)
            return nil
        } catch {
            return error as? VaultError
        }
    }

    static func caller(_ executables: [String?]) -> AgentCaller {
        AgentCaller(pid: 10, personality: "x", executables: executables, placement: .none, identified: true)
    }

    static let git = caller(["/usr/lib/git-core/git-credential-libsecret", "/usr/bin/git", "/usr/bin/bash"])
    static let python = caller(["/usr/bin/python3.11", "/usr/bin/bash"])
    static let secretTool = caller(["/usr/bin/secret-tool", "/usr/bin/bash"])
    static let startedByGit = caller(["/usr/bin/python3.11", "/usr/bin/git"])

    @Test func theDocumentedRulesDecideInTheirOrder() throws {
        let rules = try #require(try Self.load(Self.documented))
        let entry = (name: "item", owner: "secret-service")
        #expect(rules.refusal(operation: .get, entry: entry, attributes: Self.gitPassword, caller: Self.git) == nil)
        #expect(rules.refusal(operation: .get, entry: entry, attributes: Self.gitPassword, caller: Self.secretTool)?.rule.name
                == "nobody else reads git passwords")
        // Python is refused by the first rule, whatever it reads.
        #expect(rules.refusal(operation: .get, entry: entry, attributes: ["xdg:schema": "org.example.Other"], caller: Self.python)?.index == 0)
        #expect(rules.refusal(operation: .get, entry: entry, attributes: Self.gitPassword, caller: Self.python)?.index == 0)
        // A program started by git is not git's helper: `programs` is the caller's own executable.
        #expect(rules.refusal(operation: .get, entry: entry, attributes: Self.gitPassword, caller: Self.startedByGit)?.index == 0)
        // Other items and other operations are left alone.
        #expect(rules.refusal(operation: .get, entry: entry, attributes: ["xdg:schema": "org.example.Other"], caller: Self.secretTool) == nil)
        #expect(rules.refusal(operation: .list, entry: entry, attributes: Self.gitPassword, caller: Self.secretTool) == nil)
    }

    @Test func anAttributesConditionNeedsEveryNamedAttributeWithAMatchingValue() throws {
        let rules = try #require(try Self.load("""
            { "rules": [ { "name": "git on example", "action": "deny",
                           "attributes": { "xdg:schema": "org.git.*", "server": "*.test" } } ] }
            """))
        let entry = (name: "item", owner: "secret-service")
        #expect(rules.refusal(operation: .get, entry: entry, attributes: Self.gitPassword, caller: Self.secretTool) != nil)
        #expect(rules.refusal(operation: .get, entry: entry, attributes: ["xdg:schema": "org.git.Password", "server": "example.org"],
                              caller: Self.secretTool) == nil, "one value that does not match")
        #expect(rules.refusal(operation: .get, entry: entry, attributes: ["xdg:schema": "org.git.Password"], caller: Self.secretTool) == nil,
                "an entry without a named attribute does not match")
        #expect(rules.refusal(operation: .get, entry: entry, attributes: [:], caller: Self.secretTool) == nil)
    }

    @Test func aSocketRequestWhoseAttributesAreUnknownMatchesNoAttributesCondition() throws {
        let rules = try #require(try Self.load(Self.documented))
        // Asked without attributes (not known: no such entry): only the Python rule (no attributes) applies.
        #expect(rules.refusal(operation: .get, entry: ("item", "secret-service"), caller: Self.secretTool) == nil)
        #expect(rules.refusal(operation: .get, entry: ("item", "secret-service"), caller: Self.python)?.index == 0)
        let rule = try #require(rules.rules.last)
        #expect(!rule.matches(operation: .get, entry: ("item", "secret-service"), caller: Self.secretTool))
        #expect(rule.matches(operation: .get, entry: ("item", "secret-service"), attributes: Self.gitPassword, caller: Self.secretTool))
    }

    @Test func aCallerWhoseOwnExecutableIsUnknownMatchesNoProgram() throws {
        let rules = try #require(try Self.load(#"{ "rules": [ { "name": "any program", "action": "deny", "programs": ["*"] } ] }"#))
        let unknown = Self.caller([nil, "/usr/bin/git"])
        #expect(rules.refusal(operation: .get, entry: ("api", ""), attributes: [:], caller: unknown) == nil)
        #expect(rules.refusal(operation: .get, entry: ("api", ""), attributes: [:], caller: Self.caller([])) == nil)
        #expect(rules.refusal(operation: .get, entry: ("api", ""), attributes: [:], caller: Self.secretTool) != nil)
        // `parents` still means the ancestors only, `programs` the caller only.
        let parents = try #require(try Self.load(#"{ "rules": [ { "action": "deny", "parents": ["/usr/bin/secret-tool"] } ] }"#))
        #expect(parents.refusal(operation: .get, entry: ("api", ""), attributes: [:], caller: Self.secretTool) == nil)
    }

    @Test func malformedConditionsStopTheLoad() {
        let cases = [
            (#"{ "rules": [ { "action": "deny", "attributes": ["xdg:schema"] } ] }"#, "\"attributes\" of rule 1"),
            (#"{ "rules": [ { "action": "deny", "attributes": { "xdg:schema": 3 } } ] }"#, "\"attributes\" of rule 1"),
            (#"{ "rules": [ { "action": "deny", "attributes": "org.git.Password" } ] }"#, "\"attributes\" of rule 1"),
            (#"{ "rules": [ { "action": "deny", "programs": "/usr/bin/git" } ] }"#, "\"programs\" of rule 1"),
            (#"{ "rules": [ { "action": "deny", "programs": ["/usr/bin/git", 1] } ] }"#, "\"programs\" of rule 1"),
            (#"{ "rules": [ { "action": "allow" }, { "action": "deny", "attribute": { "a": "b" } } ] }"#, "unknown key \"attribute\""),
            (#"{ "rules": [ { "action": "deny", "program": ["/usr/bin/git"] } ] }"#, "unknown key \"program\""),
        ]
        for (text, message) in cases {
            let error = Self.loadError(text)
            #expect(error?.code == .invalidInput, "\(text)")
            #expect(error?.message.contains(message) == true, "\(text): \(error?.message ?? "loaded")")
        }
    }

    @Test func anEmptyAttributesObjectMatchesAnyKnownAttributes() throws {
        let rules = try #require(try Self.load(#"{ "rules": [ { "name": "bus callers", "action": "deny", "attributes": {} } ] }"#))
        #expect(rules.refusal(operation: .get, entry: ("item", "secret-service"), attributes: [:], caller: Self.secretTool) != nil)
        #expect(rules.refusal(operation: .get, entry: ("item", "secret-service"), caller: Self.secretTool) == nil,
                "attributes not known")
    }
}
