import CredentialVault
import FoundationEssentials
import VaultCrypto

/// The state row of a version 3 (bucketed) store: written once, when the store is created or
/// moved to this layout, never by a put. It binds the store's name and the number of buckets
/// (docs/FORMAT.md, "PostgreSQL tables").
///
/// `3` ‖ AES-256-GCM under the state key of `bucket_bits` u8 ‖ 7 reserved zero bytes, with the
/// associated data "vault-pg state v3" ‖ vault id ‖ u32 length ‖ store name. Its 37 bytes are
/// neither a version 1 row (72 bytes) nor a version 2 one (first byte 2): a release before
/// version 3 refuses it as an unsupported version.
struct PostgresStateV3: Equatable {
    static let version: UInt8 = 3
    static let aadLabel = Array("vault-pg state v3".utf8)
    /// 16,384 buckets: about 6 entries each at 100,000 entries (a write reads every row of its
    /// bucket; 4,096 gave about 25 and missed issue 38's put targets, docs/BENCHMARKS.md).
    static let defaultBucketBits: UInt8 = 14
    static let bucketBitsRange: ClosedRange<UInt8> = 4...16
    static let reservedByteCount = 7

    /// How many bits of a lookup choose its bucket (2^bits buckets).
    var bucketBits: UInt8

    /// The number of bucket rows the store has.
    var bucketCount: Int { 1 << Int(bucketBits) }

    /// True for a state row of version 3 (a version 1 row has no version byte but its own length).
    static func isVersion3(_ sealed: [UInt8]) -> Bool {
        sealed.first == version && sealed.count != PostgresLayout.stateV1SealedLength
    }

    static func aad(vaultID: [UInt8], storeName: String) -> [UInt8] {
        var writer = ByteWriter(capacity: 64)
        writer.append(contentsOf: aadLabel)
        writer.append(contentsOf: vaultID)
        writer.append(UInt32(storeName.utf8.count))
        writer.append(contentsOf: storeName.utf8)
        return writer.bytes
    }

    func sealed(vaultID: [UInt8], storeName: String, keys: PostgresDataKeys) throws -> [UInt8] {
        let plain = [bucketBits] + [UInt8](repeating: 0, count: Self.reservedByteCount)
        return [Self.version] + (try AES256GCM.seal(plain, using: keys.state,
                                                      authenticating: Self.aad(vaultID: vaultID, storeName: storeName)).combined)
    }

    /// Opens a version 3 state; one sealed for another store name, or altered, is tampered.
    static func open(_ sealed: [UInt8], vaultID: [UInt8], storeName: String, keys: PostgresDataKeys) throws -> PostgresStateV3 {
        guard isVersion3(sealed) else {
            throw VaultError(.unsupportedVersion, "the state row has a version this build does not read",
                             fix: "open it with the newer vault that wrote it")
        }
        let plain: SecureBytes
        do {
            plain = try AES256GCM.open(try AES256GCM.SealedBox(combined: Array(sealed.dropFirst())), using: keys.state,
                                       authenticating: aad(vaultID: vaultID, storeName: storeName))
        } catch {
            throw VaultError.tampered(region: "state row (altered, or sealed for another store name)")
        }
        let bytes = plain.withUnsafeBytes { Array($0) }
        guard bytes.count == 1 + reservedByteCount, let bits = bytes.first, bucketBitsRange.contains(bits),
              bytes.dropFirst().allSatisfy({ $0 == 0 }) else {
            throw VaultError(.unsupportedVersion, "the state row's bucket layout is one this build does not read",
                             fix: "open it with the newer vault that wrote it")
        }
        return PostgresStateV3(bucketBits: bits)
    }
}

/// One bucket row of a version 3 store: the bucket's generation (advanced by every write to one
/// of its entries) and the (lookup, row generation) of every entry in it, sealed under the bucket
/// key with the store name and the bucket's number in the associated data. A bucket row moved to
/// another number or store, altered, or missing is tampered; one put back older than a generation
/// already seen is a rollback.
struct PostgresBucket: Equatable {
    static let aadLabel = Array("vault-pg bucket v3".utf8)

    /// Advanced by one by every transaction that writes to the bucket.
    var generation: UInt64
    /// Each entry's row generation, by lookup.
    var rows: [[UInt8]: UInt64]

    /// The bucket of a lookup: its first 4 bytes, big-endian, shifted right by 32 − `bits`.
    static func index<Lookup: Collection<UInt8>>(of lookup: Lookup, bits: UInt8) -> UInt32 {
        var value: UInt32 = 0
        for byte in lookup.prefix(4) { value = (value << 8) | UInt32(byte) }
        return value >> (32 - UInt32(bits))
    }

    static func aad(vaultID: [UInt8], storeName: String, bucket: UInt32) -> [UInt8] {
        var writer = ByteWriter(capacity: 64)
        writer.append(contentsOf: aadLabel)
        writer.append(contentsOf: vaultID)
        writer.append(UInt32(storeName.utf8.count))
        writer.append(contentsOf: storeName.utf8)
        writer.append(bucket)
        return writer.bytes
    }

    /// `generation` u64 ‖ `count` u32 ‖ count × (lookup 32 ‖ row generation u64), ascending by lookup.
    func sealed(vaultID: [UInt8], storeName: String, bucket: UInt32, keys: PostgresDataKeys) throws -> [UInt8] {
        var writer = ByteWriter(capacity: 12 + rows.count * 40)
        writer.append(generation)
        writer.append(UInt32(rows.count))
        for (lookup, rowGeneration) in rows.sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) {
            writer.append(contentsOf: lookup)
            writer.append(rowGeneration)
        }
        return try AES256GCM.seal(writer.bytes, using: keys.bucket,
                                  authenticating: Self.aad(vaultID: vaultID, storeName: storeName, bucket: bucket)).combined
    }

    /// Opens a bucket row for a write: its listing checked (`PostgresBucketListing.open`) and made a
    /// dictionary, which the write changes and seals again.
    static func open(_ sealed: [UInt8], vaultID: [UInt8], storeName: String, bucket: UInt32, bits: UInt8,
                     keys: PostgresDataKeys) throws -> PostgresBucket {
        let listing = try PostgresBucketListing.open(sealed, vaultID: vaultID, storeName: storeName, bucket: bucket, bits: bits, keys: keys)
        var rows: [[UInt8]: UInt64] = [:]
        rows.reserveCapacity(listing.count)
        for index in 0..<listing.count { rows[Array(listing.lookup(at: index))] = listing.rowGeneration(at: index) }
        return PostgresBucket(generation: listing.generation, rows: rows)
    }
}

/// A bucket row opened for reading one entry (`secret(named:)`): authenticated and its whole
/// listing checked exactly as for a write (every write's open goes through this one), but kept as
/// the sorted bytes it came in, searched by bisection, instead of made a dictionary of all its
/// entries (about 25 allocations a read at 100,000 entries).
struct PostgresBucketListing {
    /// The bytes of one listed entry: lookup 32 ‖ row generation u64.
    static let entryByteCount = 40
    /// The bytes of a lookup.
    static let lookupByteCount = 32

    /// The bucket's generation.
    let generation: UInt64
    /// count × (lookup 32 ‖ row generation u64), strictly ascending by lookup (checked at open).
    private let list: [UInt8]

    /// The number of entries listed.
    var count: Int { list.count / Self.entryByteCount }

    /// The lookup of the `index`th entry (ascending).
    func lookup(at index: Int) -> ArraySlice<UInt8> {
        let start = index * Self.entryByteCount
        return list[start..<(start + Self.lookupByteCount)]
    }

    /// The row generation of the `index`th entry.
    func rowGeneration(at index: Int) -> UInt64 {
        let start = index * Self.entryByteCount + Self.lookupByteCount
        var value: UInt64 = 0
        for byte in list[start..<(start + 8)] { value = (value << 8) | UInt64(byte) }
        return value
    }

    /// The row generation the bucket lists for `lookup`, or nil when it lists none (bisection).
    func rowGeneration(of lookup: [UInt8]) -> UInt64? {
        var low = 0
        var high = count
        while low < high {
            let middle = (low + high) / 2
            let listed = self.lookup(at: middle)
            if listed.lexicographicallyPrecedes(lookup) {
                low = middle + 1
            } else if lookup.lexicographicallyPrecedes(listed) {
                high = middle
            } else {
                return rowGeneration(at: middle)
            }
        }
        return nil
    }

    /// Opens and checks a bucket row: authentic for this store, bucket number and key; its length
    /// exactly its count's; its lookups strictly ascending (none twice), each of this bucket; each
    /// row generation in 1...generation. Anything else is tampered.
    static func open(_ sealed: [UInt8], vaultID: [UInt8], storeName: String, bucket: UInt32, bits: UInt8,
                     keys: PostgresDataKeys) throws -> PostgresBucketListing {
        let plain: SecureBytes
        do {
            plain = try AES256GCM.open(try AES256GCM.SealedBox(combined: sealed), using: keys.bucket,
                                       authenticating: PostgresBucket.aad(vaultID: vaultID, storeName: storeName, bucket: bucket))
        } catch {
            throw VaultError.tampered(region: "bucket row \(bucket) (altered, moved, or sealed for another store name)")
        }
        var reader = ByteReader(plain.withUnsafeBytes { Array($0) }, region: "bucket row")
        let generation = try reader.readUInt64()
        let count = try reader.readUInt32()
        guard reader.remaining == Int(count) * entryByteCount else { throw VaultError.tampered(region: "bucket row \(bucket) (row list)") }
        let listing = PostgresBucketListing(generation: generation, list: Array(try reader.readBytes(reader.remaining)))
        for index in 0..<listing.count {
            let lookup = listing.lookup(at: index)
            let rowGeneration = listing.rowGeneration(at: index)
            guard index == 0 || listing.lookup(at: index - 1).lexicographicallyPrecedes(lookup),
                  PostgresBucket.index(of: lookup, bits: bits) == bucket, rowGeneration >= 1, rowGeneration <= generation else {
                throw VaultError.tampered(region: "bucket row \(bucket) (row list)")
            }
        }
        return listing
    }
}

/// The highest generation this store has seen of each bucket (rollback memory, in process).
struct PostgresBucketGenerations: Sendable, Equatable {
    private(set) var highest: [UInt32: UInt64] = [:]
    /// The sum of `highest`: the store's public generation (monotonic).
    private(set) var sum: UInt64 = 0

    /// From a remembered record (one generation per bucket, in bucket order).
    init(remembered: [UInt64] = []) {
        for (bucket, generation) in remembered.enumerated() where generation > 0 {
            highest[UInt32(bucket)] = generation
            sum &+= generation
        }
    }

    /// The generation below which `bucket` is a rollback.
    func floor(_ bucket: UInt32) -> UInt64 { highest[bucket] ?? 0 }

    /// The buckets read or written since the store opened.
    private(set) var observed: Set<UInt32> = []

    /// Raises `bucket`'s highest seen generation to `generation` (never lowers it).
    mutating func raise(_ bucket: UInt32, to generation: UInt64) {
        observed.insert(bucket)
        let old = highest[bucket] ?? 0
        guard generation > old else { return }
        highest[bucket] = generation
        sum &+= generation - old
    }

    /// Sets `bucket`'s generation to `generation`, lower or higher (a rollback accepted on purpose).
    mutating func accept(_ bucket: UInt32, at generation: UInt64) {
        observed.insert(bucket)
        let old = highest[bucket] ?? 0
        highest[bucket] = generation
        sum = sum &- old &+ generation
    }

    /// Every bucket's generation in bucket order, for the on-disk record.
    func record(bucketCount: Int) -> [UInt64] {
        (0..<bucketCount).map { highest[UInt32($0)] ?? 0 }
    }
}
