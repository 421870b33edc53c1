import CredentialVault
import FoundationEssentials
import VaultCLI

/// What the provider knows of an item without its secret: the Item's properties.
struct SecretItemRecord {
    /// The item's path element (the vault entry's name).
    let name: String
    /// The item's label.
    var label: String
    /// The item's attributes as clients see them (the hidden content type left out).
    var attributes: [String: String]
    /// The secret's content type ("text/plain" unless the client said otherwise).
    var contentType: String
    /// When it was made, in seconds since 1970.
    var created: UInt64
    /// When it last changed, in seconds since 1970.
    var modified: UInt64

    /// The attribute, kept with the entry's sealed attributes, that holds a content type other than
    /// "text/plain". It is not shown in the item's Attributes, nor matched by searches.
    static let contentTypeAttribute = SecretServiceEntries.contentTypeAttribute
    /// The content type of a secret whose client named none.
    static let defaultContentType = SecretServiceEntries.defaultContentType
    /// The sealed attribute that holds a label the vault's labels cannot hold as it is (control
    /// characters, line breaks, bidirectional controls: Python keyring's labels name the user and
    /// service as given). The entry's own label is then the label with those characters replaced
    /// by U+FFFD, for `vault list`; clients see the exact label. Hidden like the content type.
    static let labelAttribute = SecretServiceEntries.labelAttribute

    /// The attributes clients see and set: the hidden ones left out.
    static func visible(_ attributes: [String: String]) -> [String: String] {
        attributes.filter { $0.key != contentTypeAttribute && $0.key != labelAttribute }
    }

    /// An item as a vault entry of owner `secret-service` stores it.
    init(metadata: EntryMetadata) {
        name = metadata.name
        label = metadata.attributes[Self.labelAttribute] ?? metadata.label ?? ""
        contentType = metadata.attributes[Self.contentTypeAttribute] ?? Self.defaultContentType
        attributes = Self.visible(metadata.attributes)
        created = Self.seconds(metadata.createdAt)
        modified = Self.seconds(metadata.updatedAt)
    }

    /// An item of an in-memory collection.
    init(name: String, label: String, attributes: [String: String], contentType: String, created: UInt64, modified: UInt64) {
        self.name = name
        self.label = label
        self.attributes = attributes
        self.contentType = contentType
        self.created = created
        self.modified = modified
    }

    /// The attributes a vault entry stores: the visible ones, the content type when not the
    /// default, and the exact label when the entry's label cannot hold it.
    var storedAttributes: [String: String] {
        SecretServiceEntries.storedAttributes(attributes, contentType: contentType, label: label)
    }

    /// The label the vault entry stores: the item's, else (when the vault's label rules refuse it)
    /// the item's with the characters they refuse replaced by U+FFFD; nil when empty or unusable.
    var storedLabel: String? { SecretServiceEntries.storedLabel(label) }

    /// Whether every attribute of `query` is one of the item's with the same value (an empty query matches all).
    func matches(_ query: [String: String]) -> Bool {
        query.allSatisfy { attributes[$0.key] == $0.value }
    }

    /// Seconds since 1970 of a date (0 before it).
    static func seconds(_ date: Date) -> UInt64 {
        UInt64(max(0, date.timeIntervalSince1970.rounded(.down)))
    }

    /// Now, in seconds since 1970.
    static var now: UInt64 { seconds(Date()) }
}
