import FoundationEssentials

/// One entry operation the agent decided on, as the audit log records it: never a value.
package struct AuditEvent: Sendable, Equatable {
    /// When it was decided.
    package var time: Date
    /// `get`, `list`, `add` or `rm`.
    package var operation: String
    /// The entry's name (nil for a list).
    package var entry: String?
    /// The entry's owner ("" for an app-wide entry; for a list, the owner asked for, or nil for all).
    package var owner: String?
    /// Who asked (nil when the agent was not told).
    package var requester: AgentRequester?
    /// Whether the agent allowed it.
    package var allowed: Bool
    /// For a refusal, the rule (or check) that refused it, as its error said.
    package var rule: String?

    /// An event as decided.
    package init(time: Date, operation: String, entry: String?, owner: String?, requester: AgentRequester?, allowed: Bool, rule: String?) {
        self.time = time
        self.operation = operation
        self.entry = entry
        self.owner = owner
        self.requester = requester
        self.allowed = allowed
        self.rule = rule
    }

    /// The record's JSON, with its sequence number (the bytes the chain authenticates).
    package func json(sequence: UInt64) -> JSONValue {
        let caller: JSONValue = requester.map { requester in
            .object([
                "personality": .string(requester.personality),
                "executables": .array(requester.executables.map { .string($0) }),
                "unit": requester.unit.map { .string($0) } ?? .null,
                "userUnit": requester.userUnit.map { .string($0) } ?? .null,
                "pid": .integer(Int128(requester.pid)),
                "identified": .bool(requester.identified),
            ])
        } ?? .null
        return .object([
            "seq": .integer(Int128(sequence)),
            "time": .string(ISO8601Timestamp.clampedString(from: time)),
            "operation": .string(operation),
            "entry": entry.map { .string($0) } ?? .null,
            "owner": owner.map { .string($0) } ?? .null,
            "caller": caller,
            "decision": .string(allowed ? "allowed" : "refused"),
            "rule": rule.map { .string($0) } ?? .null,
        ])
    }
}
