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
    /// Free-form name → value pairs (a Secret Service item's attributes, e.g. `xdg:schema`), sealed
    /// with the rest of the metadata; empty for most entries. Limits: `VaultLimits.maximumAttributes`.
    public var attributes: [String: String]

    /// Creates metadata.
    public init(name: String, owner: String, kind: EntryKind, label: String?, createdAt: Date, updatedAt: Date,
                expiresAt: Date?, transferable: Bool, secretByteCount: Int, attributes: [String: String] = [:]) {
        self.name = name
        self.owner = owner
        self.kind = kind
        self.label = label
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.expiresAt = expiresAt
        self.transferable = transferable
        self.secretByteCount = secretByteCount
        self.attributes = attributes
    }

    /// Decodes metadata; `attributes` may be absent (metadata encoded before it existed).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(name: try container.decode(String.self, forKey: .name),
                  owner: try container.decode(String.self, forKey: .owner),
                  kind: try container.decode(EntryKind.self, forKey: .kind),
                  label: try container.decodeIfPresent(String.self, forKey: .label),
                  createdAt: try container.decode(Date.self, forKey: .createdAt),
                  updatedAt: try container.decode(Date.self, forKey: .updatedAt),
                  expiresAt: try container.decodeIfPresent(Date.self, forKey: .expiresAt),
                  transferable: try container.decode(Bool.self, forKey: .transferable),
                  secretByteCount: try container.decode(Int.self, forKey: .secretByteCount),
                  attributes: try container.decodeIfPresent([String: String].self, forKey: .attributes) ?? [:])
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
