import FoundationEssentials
import VaultCrypto

/// An entry as it sits in the vault: metadata in the clear (inside the encrypted
/// index), secret still sealed under the value key.
struct SealedEntry: Sendable, Equatable {
    var name: String
    var owner: String
    var kind: EntryKind
    var label: String?
    var createdMilliseconds: Int64
    var updatedMilliseconds: Int64
    var expiresMilliseconds: Int64?
    var transferable: Bool
    var nonce: [UInt8]
    /// A slice of the file read from disk (entries share its storage instead of each copying its value).
    var ciphertext: ArraySlice<UInt8>
    var tag: [UInt8]
    /// Name → value attributes (flag bit 3 in the index; empty: the entry is written as before attributes existed).
    var attributes: [String: String] = [:]

    /// The attributes in the index's order: ascending by the names' UTF-8 bytes.
    var sortedAttributes: [(name: String, value: String)] {
        attributes.map { (name: $0.key, value: $0.value) }.sorted { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
    }

    var metadata: EntryMetadata {
        EntryMetadata(name: name, owner: owner, kind: kind, label: label,
                      createdAt: Date(millisecondsSince1970: createdMilliseconds),
                      updatedAt: Date(millisecondsSince1970: updatedMilliseconds),
                      expiresAt: expiresMilliseconds.map { Date(millisecondsSince1970: $0) },
                      transferable: transferable, secretByteCount: ciphertext.count, attributes: attributes)
    }

    /// The sort key: owner bytes, then name bytes. The index must be strictly ascending.
    var key: EntryKey { EntryKey(owner: owner, name: name) }

    /// The AAD of the value: label ‖ vault id ‖ owner ‖ name, so a value cannot move to another entry or vault.
    static func valueAAD(vaultID: [UInt8], owner: String, name: String) -> [UInt8] {
        entryBinding(VaultFileLayout.valueAADPrefix, vaultID: vaultID, owner: owner, name: name).bytes
    }

    /// `label` ‖ vault id ‖ owner ‖ name (owner and name length-prefixed): what binds a sealed
    /// value to its entry and vault, shared by the entries' values (`valueAAD`) and their kept
    /// versions (`SealedVersion.aad`, which appends the version number).
    static func entryBinding(_ label: [UInt8], vaultID: [UInt8], owner: String, name: String) -> ByteWriter {
        var writer = ByteWriter(capacity: 64 + owner.utf8.count + name.utf8.count)
        writer.append(contentsOf: label)
        writer.append(contentsOf: vaultID)
        writer.appendLengthPrefixed(owner)
        writer.appendLengthPrefixed(name)
        return writer
    }

    /// Seals `secret` for the entry (owner, name) with a fresh random nonce.
    static func seal(_ secret: SecureBytes, owner: String, name: String, vaultID: [UInt8], key: SymmetricKey) throws
        -> (nonce: [UInt8], ciphertext: ArraySlice<UInt8>, tag: [UInt8]) {
        let box = try AES256GCM.seal(secret, using: key, authenticating: valueAAD(vaultID: vaultID, owner: owner, name: name))
        return (box.nonce.bytes, box.ciphertext[...], box.tag)
    }

    /// Opens the secret. - Throws: `.tampered` naming the entry when it does not verify.
    func open(vaultID: [UInt8], key: SymmetricKey, path: String?) throws -> SecureBytes {
        do {
            let box = try AES256GCM.SealedBox(nonce: AES256GCM.Nonce(bytes: nonce), ciphertext: Array(ciphertext), tag: tag)
            return try AES256GCM.open(box, using: key, authenticating: Self.valueAAD(vaultID: vaultID, owner: owner, name: name))
        } catch let error as CryptoError where error.isAuthenticationFailure {
            throw VaultError.tampered(region: "value of entry '\(name)'", path: path)
        }
    }
}

/// Identifies an entry: owner namespace and name, compared and ordered by their UTF-8
/// bytes. Not by `String` equality: that treats "é" and "e\u{301}" as equal, while the
/// index is ordered by bytes, and mixing the two would write an out-of-order index.
struct EntryKey: Hashable, Comparable, Sendable {
    var owner: String
    var name: String

    static func == (lhs: EntryKey, rhs: EntryKey) -> Bool {
        lhs.owner.utf8.elementsEqual(rhs.owner.utf8) && lhs.name.utf8.elementsEqual(rhs.name.utf8)
    }

    func hash(into hasher: inout Hasher) {
        for byte in owner.utf8 { hasher.combine(byte) }
        hasher.combine(0xFF as UInt8)   // never a UTF-8 byte: separates owner from name
        for byte in name.utf8 { hasher.combine(byte) }
    }

    static func < (lhs: EntryKey, rhs: EntryKey) -> Bool {
        if !lhs.owner.utf8.elementsEqual(rhs.owner.utf8) { return lhs.owner.utf8.lexicographicallyPrecedes(rhs.owner.utf8) }
        return lhs.name.utf8.lexicographicallyPrecedes(rhs.name.utf8)
    }
}

extension String {
    /// Byte-for-byte equality of the UTF-8 encodings (no Unicode canonical equivalence).
    func sameBytes(as other: String) -> Bool { utf8.elementsEqual(other.utf8) }
}

extension Date {
    /// A date from whole milliseconds since 1970 (the vault's time unit).
    init(millisecondsSince1970 milliseconds: Int64) {
        self.init(timeIntervalSince1970: TimeInterval(milliseconds) / 1000)
    }

    /// Whole milliseconds since 1970, rounded down.
    var millisecondsSince1970: Int64 {
        let value = (timeIntervalSince1970 * 1000).rounded(.down)
        guard value.isFinite else { return 0 }
        return Int64(exactly: value) ?? (value > 0 ? .max : .min)
    }
}
