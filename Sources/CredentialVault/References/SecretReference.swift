/// A reference to a vault entry written where a secret's value would go: `vault://NAME` or
/// `vault://NAME?owner=OWNER`.
///
/// `.env` files (`vault exec --env-file`) and templates (`vault inject`) hold references instead of
/// values; the reference is replaced by the secret when the program runs. The grammar (docs/CLI.md):
///
///     reference = "vault://" name [ "?owner=" owner ]
///     name      = 1*( any character but "?", "#", "%" and controls / "%" HEXDIG HEXDIG )
///     owner     = *( any character but "&", "#", "%" and controls / "%" HEXDIG HEXDIG )
///
/// `/` stands for itself; every `%XX` is decoded exactly once (a literal `%` is `%25`, so
/// `vault://100%25` names the entry `100%`). Any query key but `owner`, a second `owner`, or a
/// fragment (`#`) is refused. The decoded name and owner follow the rules of entry names (UTF-8,
/// NFC, no control characters, at most 255 bytes).
public struct SecretReference: Sendable, Hashable, CustomStringConvertible {
    /// The entry's name, decoded.
    public let name: String
    /// The entry's owner as `vault list` prints it (`user:…`, `guest:…`), or "" for a plain entry.
    public let owner: String

    /// The scheme and separator every reference starts with.
    public static let prefix = "vault://"

    /// A reference to `name` of `owner`.
    /// - Throws: `VaultError` `.invalidInput` when the name or owner is not valid for an entry.
    public init(name: String, owner: String = "") throws {
        try EntryValidation.checkName(name)
        try EntryValidation.checkOwner(owner)
        self.name = name
        self.owner = owner
    }

    /// Reads `text` as a reference.
    /// - Returns: `nil` when `text` does not start with `vault://` (it is an ordinary value).
    /// - Throws: `VaultError` `.invalidInput` (exit 64) when it starts with `vault://` but is not a
    ///   valid reference: an empty name, a bad `%` escape, a query key other than `owner`, a `#`,
    ///   or a decoded name that is not a valid entry name.
    public static func parse(_ text: String) throws -> SecretReference? {
        // Bytes, not Characters: a combining mark after '#', '?' or '&' must not hide it.
        let bytes = Array(text.utf8)
        guard bytes.starts(with: prefix.utf8) else { return nil }
        let body = bytes.dropFirst(prefix.utf8.count)
        guard !body.contains(UInt8(ascii: "#")) else {
            throw invalid(text, "a reference has no fragment ('#'); write a '#' in a name as %23")
        }
        let parts = body.split(separator: UInt8(ascii: "?"), maxSplits: 1, omittingEmptySubsequences: false)
        let name = try decode(parts[0], in: text, what: "name")
        guard !name.isEmpty else { throw invalid(text, "the entry name is empty") }
        var owner = ""
        if parts.count == 2 {
            var sawOwner = false
            let key = Array("owner=".utf8)
            for pair in parts[1].split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: false) {
                guard pair.starts(with: key), !sawOwner else {
                    throw invalid(text, sawOwner && pair.starts(with: key) ? "'owner' is given twice"
                                                                           : "the only query key a reference takes is 'owner'")
                }
                sawOwner = true
                owner = try decode(pair.dropFirst(key.count), in: text, what: "owner")
            }
        }
        do {
            return try SecretReference(name: name, owner: owner)
        } catch let error as VaultError {
            throw VaultError(.invalidInput, "the reference \(TerminalText.escaped(text)) is not valid: \(error.message)",
                             fix: error.fix)
        }
    }

    /// The reference written back in its canonical form (`%` escapes only where needed).
    public var description: String {
        Self.prefix + Self.encode(name, reserved: "?#%") + (owner.isEmpty ? "" : "?owner=" + Self.encode(owner, reserved: "&#%"))
    }

    /// Decodes `%XX` escapes exactly once; the result must be UTF-8 without control characters.
    private static func decode(_ part: ArraySlice<UInt8>, in text: String, what: String) throws -> String {
        guard let bytes = part.percentDecoded() else {
            throw invalid(text, "'%' in the \(what) must start an escape of two hex digits (a literal '%' is %25)")
        }
        guard let decoded = String(validating: bytes, as: UTF8.self) else {
            throw invalid(text, "the \(what)'s escapes do not decode to UTF-8")
        }
        return decoded
    }

    private static func encode(_ text: String, reserved: String) -> String {
        var result = ""
        for scalar in text.unicodeScalars {
            if scalar == " " || reserved.unicodeScalars.contains(scalar) {
                let digits = Array("0123456789ABCDEF"), value = Int(scalar.value)
                result += "%" + String(digits[value >> 4]) + String(digits[value & 0xF])
            } else {
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    private static func invalid(_ text: String, _ reason: String) -> VaultError {
        VaultError(.invalidInput, "the reference \(TerminalText.escaped(text)) is not valid: \(reason)",
                   fix: "write it as vault://NAME or vault://NAME?owner=OWNER, with %XX escapes (docs/CLI.md, \"References\")")
    }
}
