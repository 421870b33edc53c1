import CredentialVault
import FoundationEssentials
import VaultCrypto

/// The keys of one PostgreSQL vault, derived from its data key (DEK) by HKDF-SHA256 with the
/// vault id as salt and one label per purpose (docs/FORMAT.md, "PostgreSQL tables").
struct PostgresDataKeys: Sendable {
    /// Keyed hash of (owner, name): the row's lookup column, so the database learns no names.
    let lookup: SymmetricKey
    /// Seals each entry row (metadata and value together).
    let entry: SymmetricKey
    /// Seals the vault's state row (generation, entry count, digest of the row set; for version 3 the layout).
    let state: SymmetricKey
    /// Seals the bucket rows of a version 3 store.
    let bucket: SymmetricKey

    init(dek: SymmetricKey, vaultID: [UInt8]) throws {
        func derive(_ label: String) throws -> SymmetricKey {
            SymmetricKey(bytes: try HKDFSHA256.deriveKey(inputKeyMaterial: dek.bytes, salt: vaultID,
                                                          info: Array(label.utf8), outputByteCount: 32))
        }
        lookup = try derive(PostgresLayout.lookupKeyInfo)
        entry = try derive(PostgresLayout.entryKeyInfo)
        state = try derive(PostgresLayout.stateKeyInfo)
        bucket = try derive(PostgresLayout.bucketKeyInfo)
    }
}

/// Constants of the PostgreSQL layout. Changing any of them makes existing databases unreadable.
enum PostgresLayout {
    static let slotVersion: UInt8 = 1
    static let vaultIDByteCount = 16
    static let saltByteCount = 32
    static let kekInfo = Array("vault-pg kek v1".utf8)
    static let slotAADLabel = Array("vault-pg slot v1".utf8)
    static let entryAADLabel = Array("vault-pg entry v1".utf8)
    static let stateAADLabel = Array("vault-pg state v1".utf8)
    /// State rows written since issue 25: a version byte, and the store name and every row's
    /// generation sealed in (a swapped store name, or one old row put back, is seen).
    static let stateAADLabelV2 = Array("vault-pg state v2".utf8)
    static let stateVersion2: UInt8 = 2
    /// A version 1 state row: nonce, 44 bytes of plaintext sealed, tag (no version byte).
    static let stateV1SealedLength = AES256GCM.nonceByteCount + 44 + AES256GCM.tagByteCount
    static let lookupKeyInfo = "vault-pg lookup v1"
    static let entryKeyInfo = "vault-pg entry v1"
    static let stateKeyInfo = "vault-pg state v1"
    static let bucketKeyInfo = "vault-pg bucket v3"
}

/// The key slot row: how the store key becomes the KEK that unwraps the DEK.
struct PostgresKeySlot: Equatable {
    var kind: UInt8
    var parameters: Scrypt.Parameters
    var salt: [UInt8]
    var wrapped: AES256GCM.SealedBox

    /// The bytes the wrap authenticates: label, vault id, and every slot field before the nonce.
    static func aad(vaultID: [UInt8], kind: UInt8, parameters: Scrypt.Parameters, salt: [UInt8]) -> [UInt8] {
        PostgresLayout.slotAADLabel + vaultID + fields(kind: kind, parameters: parameters, salt: salt)
    }

    /// Version, kind, KDF parameters and salt: the slot's first 43 bytes (of 103; docs/FORMAT.md).
    static func fields(kind: UInt8, parameters: Scrypt.Parameters, salt: [UInt8]) -> [UInt8] {
        var writer = ByteWriter(capacity: 48)
        writer.append(PostgresLayout.slotVersion)
        writer.append(kind)
        writer.append(parameters.logN)
        writer.append(parameters.r)
        writer.append(parameters.p)
        writer.append(contentsOf: salt)
        return writer.bytes
    }

    func encoded() -> [UInt8] {
        Self.fields(kind: kind, parameters: parameters, salt: salt) + wrapped.combined
    }

    static func decode(_ bytes: [UInt8]) throws -> PostgresKeySlot {
        var reader = ByteReader(bytes, region: "key slot")
        let version = try reader.readUInt8()
        guard version == PostgresLayout.slotVersion else {
            throw VaultError(.unsupportedVersion, "the key slot has version \(version); this build reads version \(PostgresLayout.slotVersion)")
        }
        let kind = try reader.readUInt8()
        let parameters = Scrypt.Parameters(logN: try reader.readUInt8(), r: try reader.readUInt32(), p: try reader.readUInt32())
        let salt = Array(try reader.readBytes(PostgresLayout.saltByteCount))
        let combined = try reader.readBytes(AES256GCM.nonceByteCount + 32 + AES256GCM.tagByteCount)
        guard reader.remaining == 0 else { throw VaultError.corrupt("the key slot has \(reader.remaining) trailing bytes") }
        return PostgresKeySlot(kind: kind, parameters: parameters, salt: salt, wrapped: try AES256GCM.SealedBox(combined: combined))
    }
}

/// The vault's state row, sealed: the generation, how many entries there are, and a digest of
/// every (lookup, row generation) pair, so that a deleted, added or rolled-back row is seen.
///
/// Version 2 (written by every write since issue 25) seals it with the store's name in the
/// associated data, so the rows of a store renamed (or two stores' names swapped) by the
/// database's administrator are refused, and carries every row's generation, so that `get`
/// refuses one old row put back without reading the whole row set. A version 1 state (no
/// version byte) is still read; the store's next write re-seals it as version 2.
struct PostgresVaultState: Equatable {
    var generation: UInt64
    var entryCount: UInt32
    var rowSetDigest: [UInt8]
    /// Each row's generation by lookup (version 2); nil for a version 1 state.
    var rowGenerations: [[UInt8]: UInt64]?

    init(generation: UInt64, entryCount: UInt32, rowSetDigest: [UInt8], rowGenerations: [[UInt8]: UInt64]? = nil) {
        self.generation = generation
        self.entryCount = entryCount
        self.rowSetDigest = rowSetDigest
        self.rowGenerations = rowGenerations
    }

    /// A version 2 state for this row set.
    static func make(generation: UInt64, rows: [[UInt8]: UInt64]) throws -> PostgresVaultState {
        PostgresVaultState(generation: generation, entryCount: UInt32(rows.count),
                           rowSetDigest: try digest(of: rows.map { ($0.key, $0.value) }), rowGenerations: rows)
    }

    /// The associated data of a version 2 state: label, vault id, and the store's name.
    static func aadV2(vaultID: [UInt8], storeName: String) -> [UInt8] {
        var writer = ByteWriter(capacity: 64)
        writer.append(contentsOf: PostgresLayout.stateAADLabelV2)
        writer.append(contentsOf: vaultID)
        writer.append(UInt32(storeName.utf8.count))
        writer.append(contentsOf: storeName.utf8)
        return writer.bytes
    }

    static func digest(of rows: [(lookup: [UInt8], rowGeneration: UInt64)]) throws -> [UInt8] {
        var writer = ByteWriter(capacity: 16 + rows.count * 40)
        for row in rows.sorted(by: { $0.lookup.lexicographicallyPrecedes($1.lookup) }) {
            writer.append(contentsOf: row.lookup)
            writer.append(row.rowGeneration)
        }
        return try SHA256.hash(writer.bytes)
    }

    /// Seals the state as version 2, bound to the store's name.
    func sealed(vaultID: [UInt8], storeName: String, keys: PostgresDataKeys) throws -> [UInt8] {
        let rows = rowGenerations ?? [:]
        var writer = ByteWriter(capacity: 48 + rows.count * 40)
        writer.append(generation)
        writer.append(entryCount)
        writer.append(contentsOf: rowSetDigest)
        for (lookup, rowGeneration) in rows.sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) {
            writer.append(contentsOf: lookup)
            writer.append(rowGeneration)
        }
        return [PostgresLayout.stateVersion2]
            + (try AES256GCM.seal(writer.bytes, using: keys.state, authenticating: Self.aadV2(vaultID: vaultID, storeName: storeName)).combined)
    }

    /// Opens a state row of either version; a version 2 row sealed for another store name is refused.
    static func open(_ sealed: [UInt8], vaultID: [UInt8], storeName: String, keys: PostgresDataKeys) throws -> PostgresVaultState {
        let version1 = sealed.count == PostgresLayout.stateV1SealedLength
        guard version1 || sealed.first == PostgresLayout.stateVersion2 else {
            throw VaultError(.unsupportedVersion, "the state row has a version this build does not read",
                             fix: "open it with the newer vault that wrote it")
        }
        let plain: SecureBytes
        do {
            plain = version1
                ? try AES256GCM.open(try AES256GCM.SealedBox(combined: sealed), using: keys.state,
                                     authenticating: PostgresLayout.stateAADLabel + vaultID)
                : try AES256GCM.open(try AES256GCM.SealedBox(combined: Array(sealed.dropFirst())), using: keys.state,
                                     authenticating: aadV2(vaultID: vaultID, storeName: storeName))
        } catch {
            throw VaultError.tampered(region: version1 ? "state row" : "state row (altered, or sealed for another store name)")
        }
        var reader = ByteReader(plain.withUnsafeBytes { Array($0) }, region: "state row")
        var state = PostgresVaultState(generation: try reader.readUInt64(), entryCount: try reader.readUInt32(),
                                       rowSetDigest: Array(try reader.readBytes(32)))
        if !version1 {
            var rows: [[UInt8]: UInt64] = [:]
            guard reader.remaining == Int(state.entryCount) * 40 else { throw VaultError.tampered(region: "state row (row list)") }
            for _ in 0..<state.entryCount {
                let lookup = Array(try reader.readBytes(32))
                rows[lookup] = try reader.readUInt64()
            }
            guard rows.count == Int(state.entryCount), try digest(of: rows.map { ($0.key, $0.value) }) == state.rowSetDigest else {
                throw VaultError.tampered(region: "state row (row list)")
            }
            state.rowGenerations = rows
        }
        guard reader.remaining == 0 else { throw VaultError.tampered(region: "state row (trailing bytes)") }
        return state
    }
}

/// Seals and opens entry rows. A row's AAD binds the vault id, its lookup and the generation
/// it was written at, and its plaintext repeats owner and name, which are checked against the
/// lookup after opening: a flipped byte, a row moved to another lookup, a row from another
/// vault or an older copy of the row under a newer generation column are all refused.
enum PostgresRowCodec {
    static func lookup(owner: String, name: String, keys: PostgresDataKeys) throws -> [UInt8] {
        var writer = ByteWriter(capacity: 64)
        writer.append(UInt32(owner.utf8.count))
        writer.append(contentsOf: owner.utf8)
        writer.append(UInt32(name.utf8.count))
        writer.append(contentsOf: name.utf8)
        return try HMACSHA256.authenticationCode(for: writer.bytes, using: keys.lookup)
    }

    static func aad(vaultID: [UInt8], lookup: [UInt8], rowGeneration: UInt64) -> [UInt8] {
        var writer = ByteWriter(capacity: 80)
        writer.append(contentsOf: PostgresLayout.entryAADLabel)
        writer.append(contentsOf: vaultID)
        writer.append(contentsOf: lookup)
        writer.append(rowGeneration)
        return writer.bytes
    }

    static func seal(_ entry: VaultEntry, vaultID: [UInt8], lookup: [UInt8], rowGeneration: UInt64,
                     keys: PostgresDataKeys) throws -> [UInt8] {
        let metadata = entry.metadata
        var writer = ByteWriter(capacity: 128)
        appendString(metadata.owner, to: &writer)
        appendString(metadata.name, to: &writer)
        writer.append(metadata.kind.code)
        writer.append(UInt8(metadata.transferable ? 1 : 0))
        if let label = metadata.label { writer.append(UInt8(1)); appendString(label, to: &writer) } else { writer.append(UInt8(0)) }
        writer.append(milliseconds(metadata.createdAt))
        writer.append(milliseconds(metadata.updatedAt))
        if let expiresAt = metadata.expiresAt { writer.append(UInt8(1)); writer.append(milliseconds(expiresAt)) } else { writer.append(UInt8(0)) }
        writer.append(UInt32(entry.secret.count))
        // The metadata prefix and the secret are sealed as one message; the secret is copied
        // into a SecureBytes-backed buffer so no plaintext copy outlives this call.
        let header = writer.bytes
        // Attributes follow the secret, only when there are any: a row without them is sealed as
        // before, and a release before attributes refuses a row with them (its secret length check).
        var trailer = ByteWriter(capacity: 0)
        if !metadata.attributes.isEmpty { appendAttributes(metadata.attributes, to: &trailer) }
        let attributeBytes = trailer.bytes
        let plain = SecureBytes(count: header.count + entry.secret.count + attributeBytes.count) { buffer in
            header.withUnsafeBytes { buffer.copyMemory(from: $0) }
            entry.secret.withUnsafeBytes { secret in
                if let base = secret.baseAddress, secret.count > 0 {
                    UnsafeMutableRawBufferPointer(rebasing: buffer[header.count...]).copyMemory(from: UnsafeRawBufferPointer(start: base, count: secret.count))
                }
            }
            if !attributeBytes.isEmpty {
                attributeBytes.withUnsafeBytes {
                    UnsafeMutableRawBufferPointer(rebasing: buffer[(header.count + entry.secret.count)...]).copyMemory(from: $0)
                }
            }
        }
        return try AES256GCM.seal(plain, using: keys.entry,
                                  authenticating: aad(vaultID: vaultID, lookup: lookup, rowGeneration: rowGeneration)).combined
    }

    static func open(_ sealed: [UInt8], vaultID: [UInt8], lookup: [UInt8], rowGeneration: UInt64,
                     keys: PostgresDataKeys) throws -> VaultEntry {
        let plain: SecureBytes
        do {
            plain = try AES256GCM.open(try AES256GCM.SealedBox(combined: sealed), using: keys.entry,
                                       authenticating: aad(vaultID: vaultID, lookup: lookup, rowGeneration: rowGeneration))
        } catch {
            throw VaultError.tampered(region: "entry row")
        }
        // The metadata is parsed from a transient copy, wiped once parsed; the secret itself is
        // sliced out of `plain`, which stays zeroising.
        var bytes = plain.withUnsafeBytes { Array($0) }
        defer { SecureWipe.wipe(&bytes) }
        let (metadata, secretOffset) = try parseMetadata(bytes, lookup: lookup, keys: keys)
        return VaultEntry(metadata: metadata, secret: plain.slice(secretOffset..<(secretOffset + metadata.secretByteCount)))
    }

    /// The metadata of an opened row, and where its secret starts.
    private static func parseMetadata(_ bytes: [UInt8], lookup: [UInt8], keys: PostgresDataKeys) throws -> (EntryMetadata, Int) {
        var reader = ByteReader(bytes, region: "entry row")
        func tampered(_ why: String) -> VaultError { VaultError.tampered(region: "entry row (\(why))") }
        let owner = try readString(&reader)
        let name = try readString(&reader)
        guard let kind = EntryKind(code: try reader.readUInt8()) else { throw tampered("unknown kind") }
        let transferable = try reader.readUInt8() == 1
        let label: String? = try reader.readUInt8() == 1 ? try readString(&reader) : nil
        let createdAt = date(try reader.readInt64())
        let updatedAt = date(try reader.readInt64())
        let expiresAt: Date? = try reader.readUInt8() == 1 ? date(try reader.readInt64()) : nil
        let secretCount = Int(try reader.readUInt32())
        guard secretCount <= reader.remaining else { throw tampered("secret length") }
        let secretOffset = reader.offset
        _ = try reader.readBytes(secretCount)
        let attributes = reader.remaining > 0 ? try readAttributes(&reader) : [:]
        // The lookup must be the keyed hash of what the row says it is: a row moved under
        // another lookup, even of this vault, is refused.
        guard try Self.lookup(owner: owner, name: name, keys: keys) == lookup else { throw tampered("moved row") }
        let metadata = EntryMetadata(name: name, owner: owner, kind: kind, label: label, createdAt: createdAt,
                                     updatedAt: updatedAt, expiresAt: expiresAt, transferable: transferable,
                                     secretByteCount: secretCount, attributes: attributes)
        return (metadata, secretOffset)
    }

    /// `u8 count (1…64)` then each `u32 len ‖ name ‖ u32 len ‖ value`, names ascending by bytes.
    private static func appendAttributes(_ attributes: [String: String], to writer: inout ByteWriter) {
        let sorted = attributes.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
        writer.append(UInt8(clamping: sorted.count))
        for (name, value) in sorted {
            appendString(name, to: &writer)
            appendString(value, to: &writer)
        }
    }

    /// The attributes after a row's secret, held to the writer's rules; nothing may follow them.
    private static func readAttributes(_ reader: inout ByteReader) throws -> [String: String] {
        func tampered(_ why: String) -> VaultError { VaultError.tampered(region: "entry row (\(why))") }
        let count = Int(try reader.readUInt8())
        guard count >= 1, count <= VaultLimits.maximumAttributes else { throw tampered("attribute count") }
        var attributes: [String: String] = [:]
        var previousName: String?
        for _ in 0..<count {
            let name = try readString(&reader)
            let value = try readString(&reader)
            guard !name.isEmpty, name.utf8.count <= VaultLimits.maximumAttributeNameBytes,
                  !name.utf8.contains(0), !value.utf8.contains(0) else { throw tampered("attribute") }
            if let previousName, !previousName.utf8.lexicographicallyPrecedes(name.utf8) { throw tampered("attribute order") }
            guard attributes.updateValue(value, forKey: name) == nil else { throw tampered("attribute order") }
            previousName = name
        }
        guard reader.remaining == 0 else { throw tampered("trailing bytes") }
        return attributes
    }

    private static func appendString(_ text: String, to writer: inout ByteWriter) {
        writer.append(UInt32(text.utf8.count))
        writer.append(contentsOf: text.utf8)
    }

    private static func readString(_ reader: inout ByteReader) throws -> String {
        let count = Int(try reader.readUInt32())
        guard count <= VaultLimits.maximumLabelBytes else { throw VaultError.tampered(region: "entry row (string length)") }
        guard let text = String(validating: try reader.readBytes(count), as: UTF8.self) else {
            throw VaultError.tampered(region: "entry row (not UTF-8)")
        }
        return text
    }

    static func milliseconds(_ date: Date) -> Int64 {
        let value = (date.timeIntervalSince1970 * 1000).rounded()
        return Int64(exactly: value) ?? (value > 0 ? .max : .min)
    }

    static func date(_ milliseconds: Int64) -> Date {
        Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }
}
