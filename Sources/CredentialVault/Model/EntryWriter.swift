/// Who wrote an entry's value: kept beside the value in the entry's history, so that
/// `SecretStore.history(named:owner:)` can say where each earlier version came from.
///
/// A short tag, never a secret: `add`, `import`, `refresh`, `restore`, `migration`, or
/// `agent: <the caller>` for a write through `vault agent`.
public struct EntryWriter: Sendable, Hashable, CustomStringConvertible {
    /// The tag as stored (at most `maximumBytes` UTF-8 bytes).
    public let tag: String

    /// The longest tag kept, in UTF-8 bytes; a longer one is cut at a character boundary.
    public static let maximumBytes = 512

    /// A writer with a tag of your own (cut to `maximumBytes`).
    public init(tag: String) {
        var cut = Substring(tag)
        while cut.utf8.count > Self.maximumBytes { cut = cut.dropLast() }
        self.tag = String(cut)
    }

    /// The tag.
    public var description: String { tag }

    /// Not said: a write through an API that did not name its writer (shown as "unknown").
    public static let unspecified = EntryWriter(tag: "")
    /// The `add` command.
    public static let add = EntryWriter(tag: "add")
    /// An import from another password manager's export.
    public static let `import` = EntryWriter(tag: "import")
    /// The session saving refreshed tokens (whose values keep no history: see `HistoryPolicy`).
    public static let refresh = EntryWriter(tag: "refresh")
    /// A guest's item moved to the signed-in user.
    public static let migration = EntryWriter(tag: "migration")
    /// An earlier version brought back.
    public static func restore(version: Int) -> EntryWriter { EntryWriter(tag: "restore of version \(version)") }
    /// A write through `vault agent`, naming its caller (personality, executable chain, unit).
    public static func agent(caller: String) -> EntryWriter { EntryWriter(tag: "agent: \(caller)") }
}
