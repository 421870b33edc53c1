/// What happens when a guest item and the account's item share a name during sign-in.
public enum MergePolicy: Sendable {
    /// The account's item wins; the guest's stays with the guest (nothing is lost).
    case keepAccount
    /// The guest's item replaces the account's.
    case keepGuest
    /// The item updated most recently wins (the account's on a tie).
    case newestWins
    /// Sign-in stops with `.mergeConflict` and nothing changes.
    case fail
    /// Your closure decides, given the guest's and the account's metadata.
    case custom(@Sendable (_ guest: EntryMetadata, _ account: EntryMetadata) -> MergeResolution)

    func resolve(guest: EntryMetadata, account: EntryMetadata) -> MergeResolution? {
        switch self {
        case .keepAccount: .keepAccount
        case .keepGuest: .keepGuest
        case .newestWins: guest.updatedAt > account.updatedAt ? .keepGuest : .keepAccount
        case .fail: nil
        case let .custom(decide): decide(guest, account)
        }
    }
}

/// The outcome of one conflict.
public enum MergeResolution: String, Sendable, Codable {
    /// The account's item was kept; the guest's stayed with the guest.
    case keepAccount
    /// The guest's item replaced the account's.
    case keepGuest
}

/// What a sign-in from guest did with the guest's items.
public struct MigrationReport: Sendable, Equatable, Codable {
    /// One name conflict and how it was resolved.
    public struct Conflict: Sendable, Equatable, Codable {
        /// The item name.
        public let name: String
        /// What the merge policy decided.
        public let resolution: MergeResolution
    }

    /// The guest's anonymous id.
    public let anonymousID: String
    /// The account's user id.
    public let userID: String
    /// Items moved from the guest to the account (including conflicts resolved as keepGuest).
    public let moved: [String]
    /// Name conflicts and their resolution.
    public let conflicts: [Conflict]
    /// Items that stayed with the guest: non-transferable ones and conflicts resolved as keepAccount.
    public let stayed: [String]
}
