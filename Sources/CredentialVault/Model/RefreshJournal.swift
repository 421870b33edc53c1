import FoundationEssentials

/// The "refresh in flight" journal entry (profile key "refreshInFlight"), written before the
/// refresh request leaves and cleared after the new tokens are saved, so that a launch after
/// a crash can tell what happened (docs/SESSIONS.md, "A kill during refresh").
///
/// JSON keys: "journalId", "userId", "startedAt" (ISO 8601 with milliseconds), "interrupted"
/// (true once a launch found the refresh unfinished).
public struct RefreshJournal: Sendable, Equatable {
    /// Matches the marker the refresh writes into the vault with the new tokens.
    public var journalID: String
    /// Whose refresh it was.
    public var userID: String
    /// When the request was about to be sent.
    public var startedAt: Date
    /// A launch found it unfinished: the tokens in the vault are the old ones, and the server
    /// may already have rotated the refresh token.
    public var interrupted: Bool

    /// Creates a journal entry.
    public init(journalID: String, userID: String, startedAt: Date, interrupted: Bool = false) {
        self.journalID = journalID
        self.userID = userID
        self.startedAt = startedAt
        self.interrupted = interrupted
    }
}

/// What a launch found of a refresh that a crash interrupted (`SessionManager.refreshRecovery`).
public enum RefreshRecovery: Sendable, Equatable {
    /// The new tokens were saved before the crash: nothing is lost, the journal is cleared.
    case completed(startedAt: Date)
    /// The new tokens were not saved: the old ones are kept, and the server may have rotated
    /// the refresh token already. The next refresh says so if the server rejects it.
    case interrupted(startedAt: Date)
}

extension RefreshJournal {
    init(json: JSONObjectReader) throws(JSONShapeError) {
        self.init(journalID: try json.string("journalId"), userID: try json.string("userId"),
                  startedAt: try json.timestamp("startedAt"), interrupted: json.optional("interrupted")?.boolValue ?? false)
    }

    func jsonMembers(path: String) throws(JSONShapeError) -> [String: JSONValue] {
        guard let started = ISO8601Timestamp.string(from: startedAt) else {
            throw JSONShapeError(path: "\(path).startedAt", problem: "is outside years 1–9999")
        }
        return ["journalId": .string(journalID), "userId": .string(userID), "startedAt": .string(started),
                "interrupted": .bool(interrupted)]
    }
}
