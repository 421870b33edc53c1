/// Who may do what with the agent's entries: its rules as they apply to one caller (the rules file
/// of `vault agent`, read for the process that connected). `AgentRequestHandler` asks it about
/// every entry of an entry request (get, list, add, rm), after the reserved-name check.
package protocol AgentAccessPolicy: Sendable {
    /// Refuses `operation` on `entry` when a rule does.
    /// - Parameters:
    ///   - operation: get, add or rm.
    ///   - entry: the entry's name and owner.
    /// - Throws: `VaultError` `.deniedByRule` naming the rule.
    func check(_ operation: AgentOperation, entry: (name: String, owner: String)) throws

    /// Whether a `list` shows `entry` to this caller (an entry it may not list is left out, not refused).
    /// - Parameter entry: the entry's name and owner.
    /// - Returns: true when the rules allow listing it.
    func lists(_ entry: (name: String, owner: String)) -> Bool

    /// Refuses `operation` on `entry`, whose attributes are known, when a rule does (rules on
    /// attributes can then match). The handler calls this one; by default it asks `check(_:entry:)`.
    /// - Parameter attributes: the stored entry's attributes (for add, the new entry's); nil when
    ///   there is no such entry.
    /// - Throws: `VaultError` `.deniedByRule` naming the rule.
    func check(_ operation: AgentOperation, entry: (name: String, owner: String), attributes: [String: String]?) throws

    /// Whether a `list` shows `entry`, whose attributes are known; by default `lists(_:)`.
    func lists(_ entry: (name: String, owner: String), attributes: [String: String]?) -> Bool

    /// The caller these rules are for, when known: the handler names it in the audit log and as
    /// the writer in an entry's history when the request itself came without one.
    var requester: AgentRequester? { get }
}

extension AgentAccessPolicy {
    /// Not known, unless the policy says.
    package var requester: AgentRequester? { nil }

    /// The check without the attributes, unless the policy matches on them.
    package func check(_ operation: AgentOperation, entry: (name: String, owner: String), attributes: [String: String]?) throws {
        try check(operation, entry: entry)
    }

    /// The listing decision without the attributes, unless the policy matches on them.
    package func lists(_ entry: (name: String, owner: String), attributes: [String: String]?) -> Bool {
        lists(entry)
    }
}
