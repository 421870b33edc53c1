import FoundationEssentials

/// The non-secret state of an install, kept as plain JSON by `ProfileStore`: the anonymous
/// id, the signed-in user, app settings and an unfinished sign-in.
///
/// File shape (keys sorted when written):
/// ```json
/// {
///   "anonymousId": "6F1C…",
///   "pendingSignIn": { "anonymousId": "…", "journalId": "…", "startedAt": "2026-01-31T08:15:00.000Z",
///                      "user": { … }, "userId": "…" },
///   "schemaVersion": 1,
///   "settings": { "theme": "dark" },
///   "user": { "id": "…", "onboardingComplete": true }
/// }
/// ```
/// Unknown top-level keys land in `extra` and unknown keys inside "user" are kept too, so
/// a file written by a newer minor release survives a rewrite by this one.
public struct Profile: Sendable, Equatable {
    /// The schema this build writes and the newest it reads.
    public static let currentSchemaVersion = 1

    /// The schema of the file this came from, or `currentSchemaVersion` for a new profile.
    public var schemaVersion: Int
    /// The install's anonymous id, stable until sign-in migrates it.
    public var anonymousID: String?
    /// The signed-in user, or nil for a guest.
    public var user: User?
    /// App settings: the `UserDefaults` part.
    public var settings: [String: JSONValue]
    /// A sign-in that started (its journal written) but has not finished.
    public var pendingSignIn: PendingSignIn?
    /// What this install remembers of users who signed out, by user id: whether they
    /// finished onboarding and whether their local items were kept for their return.
    public var returningUsers: [String: ReturningUser] = [:]
    /// A refresh whose request may have reached the server but whose tokens are not known saved.
    public var refreshInFlight: RefreshJournal?
    /// Unknown top-level keys, written back unchanged. Keys the profile itself uses are
    /// ignored here.
    public var extra: [String: JSONValue]

    /// Unknown keys that were inside "user", with the id of the user they belong to.
    var preservedUserMembers: PreservedMembers?

    /// Creates a profile; the defaults give an empty one.
    public init(schemaVersion: Int = Profile.currentSchemaVersion, anonymousID: String? = nil, user: User? = nil,
                settings: [String: JSONValue] = [:], pendingSignIn: PendingSignIn? = nil,
                extra: [String: JSONValue] = [:]) {
        self.schemaVersion = schemaVersion
        self.anonymousID = anonymousID
        self.user = user
        self.settings = settings
        self.pendingSignIn = pendingSignIn
        self.extra = extra
    }

    /// Unknown members of a nested object, tied to the user id they were read with so they
    /// are dropped when a different user takes the slot.
    struct PreservedMembers: Sendable, Equatable {
        let userID: String
        let members: [String: JSONValue]
    }
}

/// A sign-in between its journal entry and its completion, so a crash can be resumed or
/// rolled back on the next launch.
///
/// JSON keys: "journalId", "userId", "anonymousId", "user", "startedAt" (ISO 8601 with
/// milliseconds, whatever the encoder's date strategy).
public struct PendingSignIn: Sendable, Equatable, Codable {
    /// The id of the migration journal this sign-in wrote.
    public var journalID: String
    /// The id of the account signing in.
    public var userID: String
    /// The anonymous id whose items are moving to the account.
    public var anonymousID: String
    /// The account signing in.
    public var user: User
    /// When the sign-in started.
    public var startedAt: Date

    /// Creates a pending sign-in.
    public init(journalID: String, userID: String, anonymousID: String, user: User, startedAt: Date) {
        self.journalID = journalID
        self.userID = userID
        self.anonymousID = anonymousID
        self.user = user
        self.startedAt = startedAt
    }

    /// Decodes from the JSON shape above.
    /// - Throws: `DecodingError.dataCorrupted` naming the member that is missing or mistyped.
    public init(from decoder: any Decoder) throws {
        let value = try JSONValue(from: decoder)
        let pending: PendingSignIn
        do throws(JSONShapeError) {
            pending = try PendingSignIn(json: JSONObjectReader(value, path: ""))
        } catch {
            throw error.decodingError(codingPath: decoder.codingPath)
        }
        self = pending
    }

    /// Encodes to the JSON shape above.
    /// - Throws: `EncodingError.invalidValue` when `startedAt` is outside years 1–9999.
    public func encode(to encoder: any Encoder) throws {
        let members: [String: JSONValue]
        do throws(JSONShapeError) {
            members = try jsonMembers(path: "")
        } catch {
            throw EncodingError.invalidValue(startedAt, EncodingError.Context(codingPath: encoder.codingPath,
                                                                               debugDescription: error.description))
        }
        try JSONValue.object(members).encode(to: encoder)
    }
}

// MARK: - JSON mapping

extension PendingSignIn {
    init(json: JSONObjectReader) throws(JSONShapeError) {
        self.init(journalID: try json.string("journalId"),
                  userID: try json.string("userId"),
                  anonymousID: try json.string("anonymousId"),
                  user: try User(json: json.object("user")),
                  startedAt: try json.timestamp("startedAt"))
    }

    func jsonMembers(path: String) throws(JSONShapeError) -> [String: JSONValue] {
        guard let started = ISO8601Timestamp.string(from: startedAt) else {
            throw JSONShapeError(path: path.isEmpty ? "startedAt" : "\(path).startedAt",
                                 problem: "is outside years 1–9999")
        }
        return [
            "journalId": .string(journalID),
            "userId": .string(userID),
            "anonymousId": .string(anonymousID),
            "user": .object(user.jsonMembers),
            "startedAt": .string(started),
        ]
    }
}

extension Profile {
    /// Top-level JSON keys.
    enum Key {
        static let schemaVersion = "schemaVersion"
        static let anonymousID = "anonymousId"
        static let user = "user"
        static let settings = "settings"
        static let pendingSignIn = "pendingSignIn"
        static let returningUsers = "returningUsers"
        static let refreshInFlight = "refreshInFlight"
        static let all: Set<String> = [schemaVersion, anonymousID, user, settings, pendingSignIn, returningUsers,
                                       refreshInFlight]
    }

    /// The "schemaVersion" member: a whole number of at least 1.
    static func schemaVersion(of document: JSONObjectReader) throws(JSONShapeError) -> Int {
        guard let value = document.optional(Key.schemaVersion) else {
            throw JSONShapeError(path: Key.schemaVersion, problem: "is missing; it must be a whole number")
        }
        guard let version = value.intValue, version >= 1 else {
            let kind = value.doubleValue == nil ? ", not \(value.kindDescription)" : ""
            throw JSONShapeError(path: Key.schemaVersion, problem: "must be a whole number of at least 1\(kind)")
        }
        return version
    }

    /// Reads a profile of a supported schema version; check the version first.
    init(json document: JSONObjectReader) throws(JSONShapeError) {
        self.init(schemaVersion: try Self.schemaVersion(of: document))
        anonymousID = try document.optionalString(Key.anonymousID)
        if let userObject = try document.optionalObject(Key.user) {
            let user = try User(json: userObject)
            self.user = user
            let unknown = userObject.unknownMembers(known: User.jsonKeys)
            if !unknown.isEmpty { preservedUserMembers = PreservedMembers(userID: user.id, members: unknown) }
        }
        settings = try document.optionalObject(Key.settings)?.members ?? [:]
        if let pending = try document.optionalObject(Key.pendingSignIn) {
            pendingSignIn = try PendingSignIn(json: pending)
        }
        if let returning = try document.optionalObject(Key.returningUsers) {
            for id in returning.members.keys.sorted() {
                returningUsers[id] = try ReturningUser(json: returning.object(id))
            }
        }
        if let journal = try document.optionalObject(Key.refreshInFlight) {
            refreshInFlight = try RefreshJournal(json: journal)
        }
        extra = document.unknownMembers(known: Key.all)
    }

    /// The profile as one JSON object: `extra`, then the known keys over it.
    func jsonValue() throws(JSONShapeError) -> JSONValue {
        var members = extra.filter { !Key.all.contains($0.key) }
        members[Key.schemaVersion] = .number(Double(schemaVersion))
        if let anonymousID { members[Key.anonymousID] = .string(anonymousID) }
        if let user {
            var userMembers = user.jsonMembers
            if let preserved = preservedUserMembers, preserved.userID == user.id {
                userMembers.merge(preserved.members) { known, _ in known }
            }
            members[Key.user] = .object(userMembers)
        }
        members[Key.settings] = .object(settings)
        if let pendingSignIn {
            members[Key.pendingSignIn] = .object(try pendingSignIn.jsonMembers(path: Key.pendingSignIn))
        }
        if !returningUsers.isEmpty {
            members[Key.returningUsers] = .object(returningUsers.mapValues { .object($0.jsonMembers) })
        }
        if let refreshInFlight {
            members[Key.refreshInFlight] = .object(try refreshInFlight.jsonMembers(path: Key.refreshInFlight))
        }
        return .object(members)
    }
}

/// What an install remembers of a user after sign-out (never a credential).
///
/// JSON: `{"onboardingComplete": true, "localDataKept": false}` under `returningUsers.<user id>`.
public struct ReturningUser: Sendable, Equatable {
    /// The user finished onboarding; a later sign-in of the same user skips it.
    public var onboardingComplete: Bool
    /// The user's local items stayed on the device at sign-out (`LocalDataPolicy.keep`).
    public var localDataKept: Bool

    /// Creates a record.
    public init(onboardingComplete: Bool = false, localDataKept: Bool = false) {
        self.onboardingComplete = onboardingComplete
        self.localDataKept = localDataKept
    }

    init(json: JSONObjectReader) throws(JSONShapeError) {
        self.init(onboardingComplete: try json.optionalBool("onboardingComplete") ?? false,
                  localDataKept: try json.optionalBool("localDataKept") ?? false)
    }

    var jsonMembers: [String: JSONValue] {
        ["onboardingComplete": .bool(onboardingComplete), "localDataKept": .bool(localDataKept)]
    }
}
