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
}
