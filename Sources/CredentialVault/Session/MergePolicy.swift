import FoundationEssentials
import VaultCrypto

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
    /// Your closure decides, given both items with their values: keep one side, or return
    /// merged content that replaces the account's item (the guest's is then consumed).
    /// A closure that throws stops the sign-in, and nothing changes.
    case custom(@Sendable (_ guest: MergeCandidate, _ account: MergeCandidate) throws -> MergeDecision)

    func resolve(guest: MergeCandidate, account: MergeCandidate) throws -> MergeDecision? {
        switch self {
        case .keepAccount: .keepAccount
        case .keepGuest: .keepGuest
        case .newestWins: guest.metadata.updatedAt > account.metadata.updatedAt ? .keepGuest : .keepAccount
        case .fail: nil
        case let .custom(decide): try decide(guest, account)
        }
    }

    /// True for policies that need the items' values (only `.custom` reads them).
    var needsValues: Bool {
        if case .custom = self { return true }
        return false
    }
}

/// One side of a name conflict, as a `.custom` merge policy sees it.
public struct MergeCandidate: Sendable {
    /// The item's metadata (name, owner, kind, dates, label).
    public let metadata: EntryMetadata
    /// The item's value.
    public let value: SecureBytes
}

/// What a `.custom` merge policy decided for one conflict.
public enum MergeDecision: Sendable {
    /// Keep the account's item; the guest's stays with the guest.
    case keepAccount
    /// The guest's item replaces the account's.
    case keepGuest
    /// This value replaces the account's item (its label and kind kept); the guest's item is consumed.
    case merged(SecureBytes)

    var resolution: MergeResolution {
        switch self {
        case .keepAccount: .keepAccount
        case .keepGuest: .keepGuest
        case .merged: .merged
        }
    }
}

/// The outcome of one conflict.
public enum MergeResolution: String, Sendable, Codable {
    /// The account's item was kept; the guest's stayed with the guest.
    case keepAccount
    /// The guest's item replaced the account's.
    case keepGuest
    /// A custom policy merged both into the account's item.
    case merged
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
    /// Items moved from the guest to the account (including conflicts resolved as keepGuest or merged).
    public let moved: [String]
    /// Name conflicts and their resolution.
    public let conflicts: [Conflict]
    /// Items that stayed with the guest: non-transferable ones and conflicts resolved as keepAccount.
    public let stayed: [String]
}
