import CredentialVault
import FoundationEssentials

/// `vault list --json`, written straight to bytes.
///
/// Produces exactly what serialising `.array(entries.map { $0.jsonValue(now:) })` with
/// `JSONValue.serialized(prettyPrinted: true)` produces (a test holds the two together), without
/// building a dictionary per entry and sorting its keys: at 10,000 entries that was about half
/// of the command's time.
enum EntryListJSON {
    /// The pretty-printed JSON array of `entries`, without a final newline.
    static func render(_ entries: [EntryMetadata], now: Date) -> [UInt8] {
        guard !entries.isEmpty else { return Array("[]".utf8) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(entries.count * 320)
        func raw(_ text: StaticString) {
            text.withUTF8Buffer { bytes.append(contentsOf: $0) }
        }
        func string(_ text: String) { JSONWriter.appendQuoted(text, to: &bytes) }
        func optional(_ text: String?) {
            if let text { string(text) } else { raw("null") }
        }
        raw("[")
        for (index, entry) in entries.enumerated() {
            raw(index == 0 ? "\n  {" : ",\n  {")
            // Keys in byte order, as JSONWriter sorts them.
            raw("\n    \"attributes\": ")
            if entry.attributes.isEmpty {
                raw("{}")
            } else {
                raw("{")
                let names = entry.attributes.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
                for (position, name) in names.enumerated() {
                    raw(position == 0 ? "\n      " : ",\n      ")
                    string(name)
                    raw(": ")
                    string(entry.attributes[name] ?? "")
                }
                raw("\n    }")
            }
            raw(",\n    \"createdAt\": "); string(RFC3339.string(from: entry.createdAt))
            raw(",\n    \"expired\": "); raw(entry.isExpired(at: now) ? "true" : "false")
            raw(",\n    \"expiresAt\": "); optional(entry.expiresAt.map(RFC3339.string(from:)))
            raw(",\n    \"kind\": "); string(entry.kind.rawValue)
            raw(",\n    \"label\": "); optional(entry.label)
            raw(",\n    \"name\": "); string(entry.name)
            raw(",\n    \"owner\": "); string(entry.owner)
            raw(",\n    \"secretBytes\": "); bytes.append(contentsOf: String(entry.secretByteCount).utf8)
            raw(",\n    \"transferable\": "); raw(entry.transferable ? "true" : "false")
            raw(",\n    \"updatedAt\": "); string(RFC3339.string(from: entry.updatedAt))
            raw("\n  }")
        }
        raw("\n]")
        return bytes
    }
}
