import FoundationEssentials

/// Everything known about an entry except its secret. Safe to print and log.
public struct EntryMetadata: Sendable, Hashable, Codable {
    /// The entry's name, unique within its owner (UTF-8, case-sensitive).
    public var name: String
    /// The owner namespace, e.g. "" for app-wide items, a guest or a user namespace.
    public var owner: String
    /// What the secret is.
    public var kind: EntryKind
    /// A free-text label.
    public var label: String?
    /// When the entry was first stored.
    public var createdAt: Date
    /// When the secret or metadata last changed.
    public var updatedAt: Date
    /// When the secret stops being valid, if known.
    public var expiresAt: Date?
    /// Whether the item moves to the account when a guest signs in (false: it stays with the guest).
    public var transferable: Bool
    /// The secret's length in bytes.
    public var secretByteCount: Int

    /// Creates metadata.
    public init(name: String, owner: String, kind: EntryKind, label: String?, createdAt: Date, updatedAt: Date,
                expiresAt: Date?, transferable: Bool, secretByteCount: Int) {
        self.name = name
        self.owner = owner
        self.kind = kind
        self.label = label
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.expiresAt = expiresAt
        self.transferable = transferable
        self.secretByteCount = secretByteCount
    }

    /// True when `expiresAt` is known and not after `now`.
    public func isExpired(at now: Date) -> Bool {
        guard let expiresAt else { return false }
        return expiresAt <= now
    }

    /// True when the entry has an expiry date no later than `now + interval` (already expired included).
    /// - Parameters:
    ///   - interval: how far ahead to look, in seconds.
    ///   - now: the current time.
    public func expires(within interval: TimeInterval, of now: Date) -> Bool {
        guard let expiresAt else { return false }
        return expiresAt <= now.addingTimeInterval(interval)
    }
}
