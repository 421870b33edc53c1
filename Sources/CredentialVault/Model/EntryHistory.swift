import FoundationEssentials

/// The earlier values of one entry, as `SecretStore.history(named:owner:)` lists them: metadata
/// only, never a secret. A version's secret comes back only through a restore (a new write).
public struct EntryHistory: Sendable, Equatable {
    /// The entry's name.
    public let name: String
    /// Its owner ("" for an app-wide entry).
    public let owner: String
    /// How many earlier versions the vault keeps per entry (0: none).
    public let limit: Int
    /// The versions, newest first; the first one is the current value when the entry exists.
    public let versions: [EntryVersion]

    /// A history as listed.
    public init(name: String, owner: String, limit: Int, versions: [EntryVersion]) {
        self.name = name
        self.owner = owner
        self.limit = limit
        self.versions = versions
    }
}

/// One version of an entry's value.
public struct EntryVersion: Sendable, Equatable {
    /// The version number: 1 for the first value history knows of, +1 with every write of the entry.
    public let version: Int
    /// When this value was written.
    public let writtenAt: Date
    /// When it was replaced or removed; nil for the current value.
    public let replacedAt: Date?
    /// The secret's size in bytes.
    public let byteCount: Int
    /// Who wrote it (`EntryWriter.tag`; "" when not known).
    public let writer: String
    /// The kind the value was stored as.
    public let kind: EntryKind
    /// Whether this is the entry's current value (not a kept earlier one).
    public let isCurrent: Bool

    /// A version as listed.
    public init(version: Int, writtenAt: Date, replacedAt: Date?, byteCount: Int, writer: String, kind: EntryKind, isCurrent: Bool) {
        self.version = version
        self.writtenAt = writtenAt
        self.replacedAt = replacedAt
        self.byteCount = byteCount
        self.writer = writer
        self.kind = kind
        self.isCurrent = isCurrent
    }
}

/// Which values history keeps. Tokens never: an old refresh token kept after its rotation would
/// outlive the rotation that was meant to retire it (docs/SECURITY.md, "History"); nor anything
/// of the session's reserved entries (the OAuth client, its secret, the DPoP key, pending
/// revocations).
public enum HistoryPolicy {
    /// Versions kept per entry when the vault does not say otherwise.
    public static let defaultLimit = 10
    /// The highest limit a vault may set.
    public static let maximumLimit = 100

    /// Whether a value of `kind` stored as (owner, name) goes to history when replaced or removed.
    public static func keepsHistory(name: String, owner: String, kind: EntryKind) -> Bool {
        switch kind {
        case .accessToken, .refreshToken, .idToken: return false
        default: return !ReservedEntryNames.isReserved(name: name, owner: owner)
        }
    }
}
