/// Who sent a request to the agent, as the agent's history tags and audit records name it: the
/// caller's personality (argv[0]'s last component), its executable chain (the caller first, then
/// its parents) and its systemd units. Told by whoever identified the caller: the agent's socket
/// loop (from the peer's /proc entries), or the Secret Service provider (from the bus peer).
package struct AgentRequester: Sendable, Equatable {
    /// The caller's name for itself (argv[0]'s last component); "" when unknown.
    package let personality: String
    /// Its executables, the caller first, then its parents ("unknown" where one could not be read).
    package let executables: [String]
    /// The systemd unit (system manager) it runs in, if any.
    package let unit: String?
    /// The unit of the user's manager it runs in, if any.
    package let userUnit: String?
    /// Its process id.
    package let pid: Int32
    /// Whether the agent knows the process that connected is the one described.
    package let identified: Bool

    /// A requester as identified.
    package init(personality: String, executables: [String], unit: String?, userUnit: String?, pid: Int32, identified: Bool) {
        self.personality = personality
        self.executables = executables
        self.unit = unit
        self.userUnit = userUnit
        self.pid = pid
        self.identified = identified
    }

    /// One line: personality, pid, chain and units (the history's writer tag).
    package var summary: String {
        guard identified else { return "an unidentified process (pid \(pid))" }
        return "\(personality) (pid \(pid); \(executables.joined(separator: " < "))\(unit.map { "; unit \($0)" } ?? "")"
            + "\(userUnit.map { "; user unit \($0)" } ?? ""))"
    }
}
