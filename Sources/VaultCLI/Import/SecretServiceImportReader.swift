import CredentialVault
import VaultCrypto
import FoundationEssentials

/// How the Secret Service provider keeps its items as vault entries, shared by the provider
/// (`vault agent --secret-service`) and `vault import --from secret-service`, so that imported
/// items are served like the provider's own.
package enum SecretServiceEntries {
    /// The owner of the vault entries that are Secret Service items.
    package static let owner = "secret-service"
    /// The sealed attribute holding a content type other than `defaultContentType` (hidden from clients).
    package static let contentTypeAttribute = "vault:content-type"
    /// The content type of a secret whose client named none.
    package static let defaultContentType = "text/plain"
    /// The kind of an imported item's entry.
    package static let importedKind = EntryKind.password

    /// A fresh entry name: 16 lowercase hex digits from the random generator (a valid D-Bus path element).
    /// - Throws: `CryptoError.randomGenerationFailed`.
    package static func newEntryName() throws -> String {
        let digits = Array("0123456789abcdef".utf8)
        let bytes = try SecureRandom.bytes(count: 8)
        return String(decoding: bytes.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 0x0f)]] }, as: UTF8.self)
    }

    /// The sealed attribute that holds a label the vault's labels cannot hold as it is (control
    /// characters, line breaks, bidirectional controls: Python keyring's labels name the user and
    /// service as given). The entry's own label is then `storedLabel`; clients see the exact label.
    package static let labelAttribute = "vault:label"

    /// The attributes an entry stores for an item: the item's own, plus the content type when it is
    /// not the default, plus the exact label when the entry's label (`storedLabel`) cannot hold it.
    package static func storedAttributes(_ attributes: [String: String], contentType: String, label: String = "") -> [String: String] {
        var stored = attributes
        stored[contentTypeAttribute] = contentType == defaultContentType ? nil : contentType
        stored[labelAttribute] = storedLabel(label) == (label.isEmpty ? nil : label) ? nil : label
        return stored
    }

    /// The label an entry stores for an item's label: the label, else (when the vault's label rules
    /// refuse it) the label with the characters they refuse replaced by U+FFFD, cut to the limit;
    /// nil when empty or still unusable.
    package static func storedLabel(_ label: String) -> String? {
        guard !label.isEmpty else { return nil }
        if (try? EntryValidation.checkLabel(label)) != nil { return label }
        var shown = String(String.UnicodeScalarView(label.unicodeScalars.map { scalar in
            TerminalText.isControl(scalar) || TerminalText.isBidiControl(scalar) || scalar.value == 0x2028 || scalar.value == 0x2029
                ? "\u{FFFD}" : scalar
        }))
        while shown.utf8.count > VaultLimits.maximumLabelBytes { shown.removeLast() }
        return (try? EntryValidation.checkLabel(shown)) != nil ? shown : nil
    }
}

/// `vault import --from secret-service`: the items another Secret Service provider (gnome-keyring,
/// KeePassXC) gave, as import candidates of owner `secret-service`.
///
/// Each item becomes an entry with a fresh random name (`SecretServiceEntries.newEntryName`), its
/// label and attributes kept. An item whose label and attributes (content type included) are
/// those of an entry already there — imported before — takes that entry's name, so the import
/// plan skips it (or, with `--replace`, replaces it) instead of making a copy each run. Each such
/// entry is matched at most once, so two identical items stay two entries.
enum SecretServiceImportReader {
    /// The candidates for `items`, matched against the owner's `existing` entries.
    /// - Throws: `CryptoError.randomGenerationFailed`.
    static func read(_ items: [SecretServiceItemExport], existing: [EntryMetadata]) throws -> ImportSource {
        var unmatched: [MatchKey: [String]] = [:]
        for metadata in existing where metadata.owner == SecretServiceEntries.owner {
            unmatched[MatchKey(label: metadata.label ?? "", attributes: metadata.attributes), default: []].append(metadata.name)
        }
        var taken = Set(existing.map(\.name))
        var source = ImportSource()
        for item in items {
            // A label the vault refuses (Python keyring's hold tabs and line breaks) is stored as the
            // provider stores it: U+FFFD in the entry's label, the exact label in `vault:label`.
            let label = SecretServiceEntries.storedLabel(item.label)
            let attributes = SecretServiceEntries.storedAttributes(item.attributes, contentType: item.contentType, label: item.label)
            let key = MatchKey(label: label ?? "", attributes: attributes)
            let name: String
            if let match = unmatched[key]?.first {
                unmatched[key]?.removeFirst()
                name = match
            } else {
                name = try freshName(avoiding: taken)
            }
            taken.insert(name)
            source.candidates.append(ImportSource.Candidate(
                name: name, secret: item.secret, label: label,
                owner: SecretServiceEntries.owner, kind: SecretServiceEntries.importedKind, attributes: attributes,
                shown: "\(name) (\(item.collection.isEmpty ? "-" : item.collection)/\(item.label))"))
        }
        return source
    }

    /// What makes an item the same as an entry: its label and stored attributes.
    private struct MatchKey: Hashable {
        let label: String
        let attributes: [String: String]
    }

    /// A random name not in `taken` (a collision among 2^64 names is not expected; 8 tries bound it).
    private static func freshName(avoiding taken: Set<String>) throws -> String {
        for _ in 0..<8 {
            let name = try SecretServiceEntries.newEntryName()
            if !taken.contains(name) { return name }
        }
        throw VaultError(.io, "the random generator gave names already in use eight times")
    }
}
