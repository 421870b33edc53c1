import CredentialVault
import FoundationEssentials

/// What `vault inspect` shows about an entry: its metadata, expiry, a masked preview and,
/// for a JWT, its header and claims. Never the whole secret, never a JWT's signature.
struct EntryInspection: Sendable {
    /// The entry's metadata.
    let metadata: EntryMetadata
    /// Where the entry stands against its own expiry date.
    let expiry: ExpiryStatus
    /// A masked preview such as "eyJh…", or nil for short or binary secrets.
    let preview: String?
    /// The decoded header and claims when the secret is a JWS compact JWT (signature not checked).
    let jwt: DecodedJWT?
    /// Where the JWT stands against its `exp` claim, when it has one.
    let jwtExpiry: ExpiryStatus?
    /// The time the inspection was made at.
    let now: Date

    /// Inspects `entry` at `now`.
    /// - Parameters:
    ///   - entry: the entry with its secret; the secret is not kept.
    ///   - now: the current time, for expiry.
    init(_ entry: VaultEntry, now: Date) {
        self.metadata = entry.metadata
        self.now = now
        self.expiry = entry.metadata.expiryStatus(at: now)
        self.preview = SecretPreview.prefix(of: entry.secret)
        let jwt = try? JWT.decode(entry.secret)
        self.jwt = jwt
        self.jwtExpiry = jwt?.expiresAt.map { ExpiryStatus(expiresAt: $0, now: now) }
    }

    /// The `vault inspect --json` object: every field of `EntryMetadata.jsonValue(now:)`
    /// plus `expiry` (text), `preview` (or null) and `jwt` (`{"header": {…}, "claims": {…}}` or null).
    var jsonValue: JSONValue {
        guard case .object(var members) = metadata.jsonValue(now: now) else { return metadata.jsonValue(now: now) }
        members["expiry"] = .string(expiry.description)
        members["preview"] = preview.map(JSONValue.string) ?? .null
        members["jwt"] = jwt.map { JSONValue.object(["header": .object($0.header), "claims": .object($0.claims)]) } ?? .null
        return .object(members)
    }

    /// Label–value pairs for people, in display order. Values may span several lines.
    var fields: [(label: String, value: String)] {
        // Names, labels and JWT contents are untrusted: single-line values are escaped whole;
        // the pretty-printed JWT JSON is escaped by JSONWriter and then line by line.
        var fields: [(label: String, value: String)] = [("name", TerminalText.escaped(metadata.name))]
        if !metadata.owner.isEmpty { fields.append(("owner", TerminalText.escaped(metadata.owner))) }
        fields.append(("kind", metadata.kind.rawValue))
        fields.append(("label", metadata.label.map { TerminalText.escaped($0) } ?? "-"))
        // One line per attribute, in byte order of the names; both sides are untrusted text.
        for name in metadata.attributes.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
            fields.append(("attribute", "\(TerminalText.escaped(name)) = \(TerminalText.escaped(metadata.attributes[name] ?? ""))"))
        }
        fields.append(("created", RFC3339.string(from: metadata.createdAt)))
        fields.append(("updated", RFC3339.string(from: metadata.updatedAt)))
        fields.append(("expires", metadata.expiresAt.map { "\(RFC3339.string(from: $0)) (\(expiry))" } ?? expiry.description))
        let size = metadata.secretByteCount == 1 ? "1 byte" : "\(metadata.secretByteCount) bytes"
        fields.append(("secret", preview.map { "\($0) (\(size))" } ?? "\(size), not previewed"))
        if let jwt {
            fields.append(("jwt header", Self.pretty(.object(jwt.header))))
            fields.append(("jwt claims", Self.pretty(.object(jwt.claims))))
            if let expiresAt = jwt.expiresAt, let jwtExpiry {
                fields.append(("jwt exp", "\(RFC3339.string(from: expiresAt)) (\(jwtExpiry))"))
            }
        }
        return fields
    }

    private static func pretty(_ value: JSONValue) -> String {
        guard let bytes = try? value.serialized(prettyPrinted: true) else { return "(not printable)" }
        return String(decoding: bytes, as: UTF8.self)
    }
}
