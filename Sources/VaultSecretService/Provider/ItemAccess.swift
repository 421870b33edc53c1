import CredentialVault
import VaultCLI

/// The agent's rules as they apply to one D-Bus caller and the items of one request: what the
/// handler asks about each entry (`AgentAccessPolicy`), with the items' attributes known, so that
/// `attributes` conditions of `agent.json` match Secret Service items. A refusal is logged (rule,
/// caller, item; never a value) and thrown as `.deniedByRule` naming the rule.
struct ItemAccess: AgentAccessPolicy {
    /// The rules in force; nil: every request is allowed.
    let rules: AgentRules?
    /// Who asks.
    let caller: AgentCaller
    /// The attributes of the items concerned, by entry name (an item not here has none known).
    let attributes: [String: [String: String]]
    /// The agent's log.
    let log: @Sendable (String) -> Void

    func check(_ operation: AgentOperation, entry: (name: String, owner: String)) throws {
        guard let rules, let (rule, index) = rules.refusal(operation: operation, entry: entry, attributes: attributes[entry.name] ?? [:],
                                                         caller: caller) else { return }
        log("refused \(operation) of Secret Service item '\(entry.name)' to \(caller.description): rule \(index + 1) (\(rule.name))")
        throw VaultError(.deniedByRule, "the agent's rule \(index + 1) (\(rule.name)) refuses \(operation) of this item to \(caller.personality)",
                         fix: "change the agent's rules file if this caller should be allowed")
    }

    /// The bus caller, for the agent's audit log and history writer tags.
    var requester: AgentRequester? { caller.requester }

    func lists(_ entry: (name: String, owner: String)) -> Bool {
        (try? check(.list, entry: entry)) != nil
    }

    /// Whether the caller may list an item, without logging a refusal (searches leave such items out).
    func mayList(name: String, owner: String, attributes itemAttributes: [String: String]) -> Bool {
        guard let rules else { return true }
        return rules.refusal(operation: .list, entry: (name, owner), attributes: itemAttributes, caller: caller) == nil
    }
}
