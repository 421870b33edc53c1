#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CredentialVault

/// The agent's per-caller rules: `$XDG_CONFIG_HOME/vault/agent.json` (else `~/.config/vault/agent.json`).
///
/// ```json
/// { "rules": [
///     { "name": "only git's helper reads git entries", "action": "allow", "operations": ["get"],
///       "entries": ["git:*"], "clients": ["git-credential-vault"], "parents": ["/usr/bin/git"] },
///     { "name": "nobody else does", "action": "deny", "operations": ["get"], "entries": ["git:*"] }
/// ] }
/// ```
///
/// Evaluated in order, first match wins; a request no rule matches is allowed (add a last rule
/// `{"action": "deny"}` to deny by default). A rule matches when every condition it has holds:
/// `operations` (get, list, add, rm), `entries` (globs of the entry name), `owners` (globs of the
/// owner), `clients` (globs of the caller's personality), `parents` (each glob matches some known
/// executable in the caller's chain of ancestors), `units` (globs of the system manager's unit it
/// runs in), `userUnits` (globs of the unit of the user's own manager it runs in), `programs` (globs
/// of the caller's own executable, not its ancestors'), `attributes` (an object of attribute name →
/// glob of its value: the entry must have every named attribute with a matching value; an entry
/// without one does not match, and neither does a request whose entry's attributes are not known:
/// one on an entry that does not exist; the handler looks up the stored attributes, or a new
/// entry's for add, for socket and D-Bus requests alike). Globs are
/// fnmatch(3) patterns where `*` also matches `/`; an unknown executable or unit matches none. For
/// `list`, rules are applied to each entry and the entries a caller may not list are left out. No
/// file: every process of the user is allowed, as with ssh-agent. The file and its folders are
/// checked as OpenSSH's StrictModes checks (`SecureFileSystem.readConfigurationFile`).
package struct AgentRules: Sendable {
    /// One rule of the file.
    package struct Rule: Sendable {
        /// Its "name" (else "rule N"), for refusals and the log.
        package let name: String
        /// Whether it allows (else denies).
        package let allow: Bool
        let operations: [AgentOperation]?
        let entries: [String]?
        let owners: [String]?
        let clients: [String]?
        let parents: [String]?
        let units: [String]?
        let userUnits: [String]?
        /// Attribute name → glob of its value (Secret Service items' attributes, `xdg:schema` among them).
        let attributes: [String: String]?
        /// Globs of the caller's own executable (`executables.first`).
        let programs: [String]?

        /// A rule; a nil condition is absent (matches anything).
        init(name: String, allow: Bool, operations: [AgentOperation]?, entries: [String]?, owners: [String]?, clients: [String]?,
             parents: [String]?, units: [String]?, userUnits: [String]?, attributes: [String: String]? = nil, programs: [String]? = nil) {
            self.name = name
            self.allow = allow
            self.operations = operations
            self.entries = entries
            self.owners = owners
            self.clients = clients
            self.parents = parents
            self.units = units
            self.userUnits = userUnits
            self.attributes = attributes
            self.programs = programs
        }

        /// Whether the rule matches a request whose entry's attributes are not known (a socket request).
        func matches(operation: AgentOperation, entry: (name: String, owner: String)?, caller: AgentCaller) -> Bool {
            matches(operation: operation, entry: entry, attributes: nil, caller: caller)
        }

        /// Whether every condition of the rule holds.
        /// - Parameter attributes: the entry's attributes; nil when not known (then an `attributes` condition fails).
        func matches(operation: AgentOperation, entry: (name: String, owner: String)?, attributes entryAttributes: [String: String]?,
                     caller: AgentCaller) -> Bool {
            if let operations, !operations.contains(operation) { return false }
            if let entries {
                guard let entry, entries.contains(where: { Self.glob($0, entry.name) }) else { return false }
            }
            if let owners {
                guard let entry, owners.contains(where: { Self.glob($0, entry.owner) }) else { return false }
            }
            if let clients, !clients.contains(where: { Self.glob($0, caller.personality) }) { return false }
            if let parents {
                let ancestors = caller.executables.dropFirst().compactMap { $0 }
                guard parents.allSatisfy({ pattern in ancestors.contains { Self.glob(pattern, $0) } }) else { return false }
            }
            if let units {
                guard let unit = caller.placement.unit, units.contains(where: { Self.glob($0, unit) }) else { return false }
            }
            if let userUnits {
                guard let unit = caller.placement.userUnit, userUnits.contains(where: { Self.glob($0, unit) }) else { return false }
            }
            if let programs {
                guard let program = caller.executables.first ?? nil, programs.contains(where: { Self.glob($0, program) }) else { return false }
            }
            if let attributes {
                guard let entryAttributes, attributes.allSatisfy({ name, pattern in
                    entryAttributes[name].map { Self.glob(pattern, $0) } ?? false
                }) else { return false }
            }
            return true
        }

        private static func glob(_ pattern: String, _ text: String) -> Bool {
            fnmatch(pattern, text, 0) == 0
        }
    }

    /// The rules, in the file's order.
    package let rules: [Rule]

    /// The decision for one operation: nil when allowed, else the rule that refused, with its place.
    /// The decision without the entry's attributes: a rule with an `attributes` condition does not match.
    package func refusal(operation: AgentOperation, entry: (name: String, owner: String)?, caller: AgentCaller) -> (rule: Rule, index: Int)? {
        firstRefusal(operation: operation, entry: entry, attributes: nil, caller: caller)
    }

    /// The decision for one operation on an entry whose attributes are known (a D-Bus caller's
    /// request on a Secret Service item): nil when allowed, else the rule that refused, with its place.
    /// - Parameters:
    ///   - operation: get, list, add or rm.
    ///   - entry: the entry's name and owner (nil for a request on no one entry).
    ///   - attributes: the entry's attributes (`xdg:schema` among them), matched by `attributes` conditions.
    ///   - caller: who asks.
    package func refusal(operation: AgentOperation, entry: (name: String, owner: String)?, attributes: [String: String],
                         caller: AgentCaller) -> (rule: Rule, index: Int)? {
        firstRefusal(operation: operation, entry: entry, attributes: attributes, caller: caller)
    }

    /// The first rule that matches decides; none matching allows. `attributes` nil: not known.
    func firstRefusal(operation: AgentOperation, entry: (name: String, owner: String)?, attributes: [String: String]?,
                              caller: AgentCaller) -> (rule: Rule, index: Int)? {
        for (index, rule) in rules.enumerated() where rule.matches(operation: operation, entry: entry, attributes: attributes, caller: caller) {
            return rule.allow ? nil : (rule, index)
        }
        return nil
    }

    /// The rules file's path: in `$XDG_CONFIG_HOME`, else in `$HOME/.config`, of `environment`.
    static func path(_ environment: CommandEnvironment) -> String? {
        if let config = environment[.xdgConfigHome] { return config + "/vault/agent.json" }
        return environment[.home].map { $0 + "/.config/vault/agent.json" }
    }

    /// Reads and checks the rules file; nil when there is none.
    /// - Throws: `.insecurePermissions` for a symlink, a file or a folder above it that others can
    ///   change; `.invalidInput` for one that does not follow the schema.
    static func load(_ path: String) throws -> AgentRules? {
        let read: [UInt8]?
        do {
            read = try SecureFileSystem.readConfigurationFile(path, maxBytes: 1 << 20)
        } catch let error as VaultError where error.code == .insecurePermissions {
            throw VaultError(.insecurePermissions, "the agent's rules file cannot be trusted: \(error.message)", path: error.path,
                             fix: error.fix)
        }
        guard let bytes = read else { return nil }
        let document: JSONValue
        do {
            document = try JSONValue(parsing: bytes)
        } catch {
            throw VaultError(.invalidInput, "the agent's rules file is not JSON", path: path)
        }
        guard let list = document["rules"]?.arrayValue else {
            throw VaultError(.invalidInput, "the agent's rules file has no \"rules\" list", path: path)
        }
        let known: Set<String> = ["name", "action", "operations", "entries", "owners", "clients", "parents", "units", "userUnits",
                                  "attributes", "programs"]
        return AgentRules(rules: try list.enumerated().map { index, value in
            guard let object = value.objectValue, let action = object["action"]?.stringValue, action == "allow" || action == "deny" else {
                throw VaultError(.invalidInput, "rule \(index + 1) of the agent's rules needs \"action\": \"allow\" or \"deny\"", path: path)
            }
            if let unknown = object.keys.first(where: { !known.contains($0) }) {
                throw VaultError(.invalidInput, "rule \(index + 1) of the agent's rules has an unknown key \"\(TerminalText.escaped(unknown))\"", path: path)
            }
            func strings(_ key: String) throws -> [String]? {
                guard let member = object[key] else { return nil }
                guard let array = member.arrayValue, case let items = array.compactMap(\.stringValue), items.count == array.count else {
                    throw VaultError(.invalidInput, "\"\(key)\" of rule \(index + 1) must be a list of strings", path: path)
                }
                return items
            }
            let operations = try strings("operations")?.map { name in
                guard let operation = AgentOperation(rawValue: name), operation.concernsEntries else {
                    throw VaultError(.invalidInput, "rule \(index + 1) names the unknown operation \"\(TerminalText.escaped(name))\" (get, list, add, rm)", path: path)
                }
                return operation
            }
            var attributes: [String: String]?
            if let member = object["attributes"] {
                guard let members = member.objectValue, case let patterns = members.compactMapValues(\.stringValue),
                      patterns.count == members.count else {
                    throw VaultError(.invalidInput, "\"attributes\" of rule \(index + 1) must be an object of attribute names and value patterns (strings)",
                                     path: path)
                }
                attributes = patterns
            }
            return Rule(name: object["name"]?.stringValue ?? "rule \(index + 1)", allow: action == "allow", operations: operations,
                        entries: try strings("entries"), owners: try strings("owners"), clients: try strings("clients"),
                        parents: try strings("parents"), units: try strings("units"), userUnits: try strings("userUnits"),
                        attributes: attributes, programs: try strings("programs"))
        })
    }
}

extension AgentRules {
    /// The rules as they apply to one caller: what `AgentRequestHandler` asks about each entry.
    struct Access: AgentAccessPolicy {
        let rules: AgentRules
        let caller: AgentCaller

        func check(_ operation: AgentOperation, entry: (name: String, owner: String)) throws {
            try check(operation, entry: entry, attributes: nil)
        }

        /// With the entry's stored attributes (the new entry's for add), so rules on attributes match socket requests too.
        func check(_ operation: AgentOperation, entry: (name: String, owner: String), attributes: [String: String]?) throws {
            guard let (rule, index) = rules.firstRefusal(operation: operation, entry: entry, attributes: attributes, caller: caller) else { return }
            AgentLog.write("refused \(operation) of '\(entry.name)' to \(caller.description): rule \(index + 1) (\(rule.name))")
            throw VaultError(.deniedByRule, "the agent's rule \(index + 1) (\(rule.name)) refuses \(operation) of '\(entry.name)' to \(caller.personality)",
                             fix: "change the agent's rules file if this caller should be allowed")
        }

        func lists(_ entry: (name: String, owner: String)) -> Bool {
            lists(entry, attributes: nil)
        }

        func lists(_ entry: (name: String, owner: String), attributes: [String: String]?) -> Bool {
            rules.firstRefusal(operation: .list, entry: entry, attributes: attributes, caller: caller) == nil
        }
    }
}
