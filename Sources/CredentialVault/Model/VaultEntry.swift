import FoundationEssentials
import VaultCrypto

/// An entry with its secret, as returned by `SecretStore.entry(named:owner:)`.
public struct VaultEntry: Sendable, CustomStringConvertible {
    /// The entry's metadata.
    public let metadata: EntryMetadata
    /// The secret bytes, in zeroising memory.
    public let secret: SecureBytes

    /// Pairs metadata with a secret.
    public init(metadata: EntryMetadata, secret: SecureBytes) {
        self.metadata = metadata
        self.secret = secret
    }

    /// Names the entry; never shows the secret.
    public var description: String { "VaultEntry(\(metadata.owner.isEmpty ? "" : metadata.owner + "/")\(metadata.name), \(metadata.kind), secret redacted)" }
}

/// What to store: the input to `SecretStore.put`.
public struct NewEntry: Sendable {
    /// The name, unique within `owner`.
    public var name: String
    /// The owner namespace ("" for app-wide).
    public var owner: String
    /// The secret bytes (up to `VaultLimits.maximumSecretBytes`).
    public var secret: SecureBytes
    /// What the secret is.
    public var kind: EntryKind
    /// Optional label.
    public var label: String?
    /// Optional expiry.
    public var expiresAt: Date?
    /// Whether it moves to the account on sign-in from guest.
    public var transferable: Bool
    /// Name → value attributes, sealed with the metadata (see `EntryMetadata.attributes`).
    public var attributes: [String: String]
    /// The creation and update times to store instead of "now": set only when an entry is copied
    /// from one store to another (`vault migrate-store`), so that a migration keeps them.
    package var preservedTimestamps: PreservedTimestamps?

    /// An entry's times, carried across a migration.
    package struct PreservedTimestamps: Sendable {
        package var createdAt: Date
        package var updatedAt: Date
        package init(createdAt: Date, updatedAt: Date) {
            self.createdAt = createdAt
            self.updatedAt = updatedAt
        }
    }

    /// Describes a new or replacement entry.
    public init(name: String, owner: String = "", secret: SecureBytes, kind: EntryKind = .generic,
                label: String? = nil, expiresAt: Date? = nil, transferable: Bool = true,
                attributes: [String: String] = [:]) {
        self.name = name
        self.owner = owner
        self.secret = secret
        self.kind = kind
        self.label = label
        self.expiresAt = expiresAt
        self.transferable = transferable
        self.attributes = attributes
        self.preservedTimestamps = nil
    }

    /// A copy of a stored entry, with its times kept, for moving it to another store.
    package init(copying entry: VaultEntry) {
        let metadata = entry.metadata
        self.init(name: metadata.name, owner: metadata.owner, secret: entry.secret, kind: metadata.kind,
                  label: metadata.label, expiresAt: metadata.expiresAt, transferable: metadata.transferable,
                  attributes: metadata.attributes)
        self.preservedTimestamps = PreservedTimestamps(createdAt: metadata.createdAt, updatedAt: metadata.updatedAt)
    }
}

/// Size caps, checked before anything is allocated or written.
public enum VaultLimits {
    /// Longest entry name or owner, in UTF-8 bytes.
    public static let maximumNameBytes = 256
    /// Longest label, in UTF-8 bytes.
    public static let maximumLabelBytes = 1024
    /// Most attributes on one entry.
    public static let maximumAttributes = 64
    /// Longest attribute name, in UTF-8 bytes (at least 1).
    public static let maximumAttributeNameBytes = 256
    /// Longest attribute value, in UTF-8 bytes (may be empty).
    public static let maximumAttributeValueBytes = 1024
    /// Largest secret: 1 MiB.
    public static let maximumSecretBytes = 1 << 20
    /// Most entries in one vault.
    public static let maximumEntries = 100_000
    /// Largest vault file: 512 MiB.
    public static let maximumFileBytes = 512 << 20
}
