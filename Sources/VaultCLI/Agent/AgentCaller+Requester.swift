import CredentialVault

extension AgentCaller {
    /// The caller as the agent's handler records it (history writer tags, audit records).
    package var requester: AgentRequester {
        AgentRequester(personality: personality, executables: executables.map { $0 ?? "unknown" },
                       unit: placement.unit, userUnit: placement.userUnit, pid: pid, identified: identified)
    }
}
