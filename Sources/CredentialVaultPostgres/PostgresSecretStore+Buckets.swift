import CredentialVault
import FoundationEssentials
import Logging
import NIOCore
import PostgresNIO
import VaultCrypto

/// Reading a version 3 (bucketed) store: one entry with its bucket row in one statement, or the
/// whole store in one statement (docs/FORMAT.md, "PostgreSQL tables").
extension PostgresSecretStore {
    /// Inserts every bucket row of a store (2^bits, in bucket order) in one statement.
    static func insertBuckets(_ sealed: [[UInt8]], vaultID: [UInt8], on connection: PostgresConnection, logger: Logger) async throws {
        let buckets = sealed.map { ByteBuffer(bytes: $0) }
        try await connection.queryIfOpen("""
            INSERT INTO vault_buckets (vault_id, bucket, sealed)
            SELECT \(ByteBuffer(bytes: vaultID)), (u.n - 1)::integer, u.sealed
            FROM unnest(\(buckets)::bytea[]) WITH ORDINALITY AS u(sealed, n)
            """, logger: logger)
    }

    /// Switches this store to the bucketed layout of `sealedState` (another process moved it).
    func adoptBucketLayout(_ sealedState: [UInt8]) throws {
        let state = try PostgresStateV3.open(sealedState, vaultID: vaultID, storeName: storeName, keys: keys)
        layout.withLock { $0 = .buckets(bits: state.bucketBits) }
    }

    /// Opens a bucket row read by a statement sent when `floor` was the highest generation seen
    /// of it, refusing one older (a rollback), and records its generation.
    func observeBucket(_ sealed: [UInt8], bucket: UInt32, bits: UInt8, floor: UInt64) throws -> PostgresBucket {
        let opened = try PostgresBucket.open(sealed, vaultID: vaultID, storeName: storeName, bucket: bucket, bits: bits, keys: keys)
        try observeGeneration(opened.generation, bucket: bucket, floor: floor)
        return opened
    }

    /// As `observeBucket`, for a read of one entry: the bucket's listing checked the same way but
    /// kept sorted and searched, not made a dictionary.
    func observeBucketListing(_ sealed: [UInt8], bucket: UInt32, bits: UInt8, floor: UInt64) throws -> PostgresBucketListing {
        let opened = try PostgresBucketListing.open(sealed, vaultID: vaultID, storeName: storeName, bucket: bucket, bits: bits, keys: keys)
        try observeGeneration(opened.generation, bucket: bucket, floor: floor)
        return opened
    }

    /// Refuses a bucket generation older than `floor` (a rollback), unless accepted, and records it.
    private func observeGeneration(_ generation: UInt64, bucket: UInt32, floor: UInt64) throws {
        if options.acceptRollback && generation < floor {
            // A restore done on purpose: this bucket's memory follows the database (written at close).
            bucketsSeen.withLock { $0.accept(bucket, at: generation) }
            return
        }
        guard generation >= floor else {
            throw VaultError(.rollbackDetected,
                             "the database holds generation \(generation) of bucket \(bucket) of this vault, older than generation \(floor) already seen",
                             fix: "restore the newer database state, or open with acceptRollback if the restore was deliberate")
        }
        bucketsSeen.withLock { $0.raise(bucket, to: generation) }
    }

    /// An entry row checked against the bucket read with it: one the bucket lists but the database
    /// lacks was deleted; one of another generation than listed (an older copy put back) or not
    /// listed at all is tampered; nil when neither lists nor holds it.
    /// `expected` is the row generation the bucket lists for `lookup` (nil: none).
    func openListedRow(_ row: (rowGeneration: Int64, sealed: [UInt8])?, lookup: [UInt8], expected: UInt64?) throws -> VaultEntry? {
        guard let row else {
            if expected != nil { throw VaultError.tampered(region: "entry row (deleted)") }
            return nil
        }
        guard row.rowGeneration >= 1, expected == UInt64(row.rowGeneration) else {
            throw VaultError.tampered(region: "entry row (an older copy, or a row its bucket does not list)")
        }
        return try PostgresRowCodec.open(row.sealed, vaultID: vaultID, lookup: lookup, rowGeneration: UInt64(row.rowGeneration), keys: keys)
    }

    /// `entry(named:owner:)` for a version 3 store: the bucket row and the entry row, one prepared statement.
    func bucketEntry(named name: String, owner: String, bits: UInt8) async throws -> VaultEntry {
        let lookup = try PostgresRowCodec.lookup(owner: owner, name: name, keys: keys)
        let bucket = PostgresBucket.index(of: lookup, bits: bits)
        let floor = bucketsSeen.withLock { $0.floor(bucket) }
        let statement = PostgresBucketRead(vaultID: ByteBuffer(bytes: vaultID), lookup: ByteBuffer(bytes: lookup), bucket: Int32(bucket))
        let configuration = self.configuration
        let answer: PostgresBucketRead.Row? = try await guarding(retryingRead: true) {
            let answer = try await self.lastRow(of: statement)
            // Inside the guarded body: a standby's answer has the primary sought again (and the read sent once more).
            if let answer { try PostgresBucketRead.refuseStandby(inRecovery: answer.0, configuration: configuration) }
            return answer
        }
        guard let answer else {
            throw VaultError.tampered(region: "bucket row \(bucket) (missing)")
        }
        let row = try PostgresBucketRead.checked(answer, configuration: configuration)
        let opened = try observeBucketListing(row.bucket, bucket: bucket, bits: bits, floor: floor)
        let entryRow = row.rowGeneration.flatMap { generation in row.sealed.map { (generation, $0) } }
        guard let entry = try openListedRow(entryRow, lookup: lookup, expected: opened.rowGeneration(of: lookup)) else {
            throw VaultError.entryNotFound(Self.displayName(name, owner: owner))
        }
        return entry
    }

    /// One row of a version 3 store as read by `fetchAllBuckets`.
    struct BucketedRow: Sendable {
        var lookup: [UInt8]
        var rowGeneration: Int64
        var sealed: [UInt8]
    }

    /// A row of `fetchAllBuckets`' statement: a bucket row, an entry row, or (NULLs where the
    /// statement has none) neither.
    enum FetchedRow: Sendable {
        case bucket(UInt32, [UInt8])
        case entry(BucketedRow)
        case neither
    }

    /// Every bucket and every entry row, read in one statement (one snapshot) and checked: every
    /// bucket is there and opens (and is no rollback), every row is listed by its bucket at its
    /// generation and every listed row is there. `Options.minimumGeneration` applies here, to the
    /// sum of the bucket generations.
    /// - Returns: the sum of the bucket generations, and the rows (not yet opened).
    func fetchAllBuckets(bits: UInt8) async throws -> (generation: UInt64, rows: [BucketedRow]) {
        let bucketCount = 1 << Int(bits)
        let floors = bucketsSeen.withLock { $0 }
        let vaultID = ByteBuffer(bytes: self.vaultID)
        let logger = options.logger
        let client = self.client
        let configuration = self.configuration
        let progress = PostgresProgress()
        let fetched: (buckets: [UInt32: [UInt8]], rows: [BucketedRow]) = try await guarding(retryingRead: true, progress: progress) {
            // Taken eagerly (`PostgresEagerRows`): a full read spans many reads of the socket.
            // A large store streams for a while: the deadline applies to each thousand rows, not to all.
            let rows = try await client.eagerRows("""
                SELECT pg_catalog.pg_is_in_recovery(), b.bucket, b.sealed, NULL::bytea, NULL::bigint, NULL::bytea
                FROM vault_buckets b WHERE b.vault_id = \(vaultID)
                UNION ALL
                SELECT pg_catalog.pg_is_in_recovery(), NULL::integer, NULL::bytea, e.lookup, e.row_generation, e.sealed
                FROM vault_entries e WHERE e.vault_id = \(vaultID)
                """, logger: logger, progress: progress) { row -> FetchedRow in
                let (inRecovery, bucket, bucketSealed, lookup, rowGeneration, sealed)
                    = try row.decode((Bool, Int32?, ByteBuffer?, ByteBuffer?, Int64?, ByteBuffer?).self)
                try PostgresBucketRead.refuseStandby(inRecovery: inRecovery, configuration: configuration)
                if let bucket, let bucketSealed {
                    guard bucket >= 0, Int(bucket) < bucketCount else { throw VaultError.tampered(region: "bucket row \(bucket) (out of range)") }
                    return .bucket(UInt32(bucket), Array(buffer: bucketSealed))
                } else if let lookup, let rowGeneration, let sealed {
                    return .entry(BucketedRow(lookup: Array(buffer: lookup), rowGeneration: rowGeneration, sealed: Array(buffer: sealed)))
                }
                return .neither
            }
            var buckets: [UInt32: [UInt8]] = [:]
            var result: [BucketedRow] = []
            for row in rows {
                switch row {
                case let .bucket(bucket, sealed): buckets[bucket] = sealed
                case let .entry(entry): result.append(entry)
                case .neither: break
                }
            }
            return (buckets, result)
        }
        var opened: [UInt32: PostgresBucket] = [:]
        var sum: UInt64 = 0
        var listed = 0
        for bucket in 0..<UInt32(bucketCount) {
            guard let sealed = fetched.buckets[bucket] else { throw VaultError.tampered(region: "bucket row \(bucket) (missing)") }
            let one = try observeBucket(sealed, bucket: bucket, bits: bits, floor: floors.floor(bucket))
            opened[bucket] = one
            sum &+= one.generation
            listed += one.rows.count
        }
        if sum < options.minimumGeneration {
            throw VaultError(.rollbackDetected,
                             "the database holds generation \(sum) of this vault (the sum of its buckets'), older than generation \(options.minimumGeneration) already seen",
                             fix: "restore the newer database state, or open with a lower minimum generation if the restore was deliberate")
        }
        // Completeness by the set of lookups, not a count: a lookup twice (the primary key dropped)
        // could otherwise stand in for a deleted row.
        var seenLookups = Set<[UInt8]>(minimumCapacity: fetched.rows.count)
        for row in fetched.rows {
            guard seenLookups.insert(row.lookup).inserted else { throw VaultError.tampered(region: "entry rows (a lookup twice)") }
            let bucket = PostgresBucket.index(of: row.lookup, bits: bits)
            guard row.rowGeneration >= 1, opened[bucket]?.rows[row.lookup] == UInt64(row.rowGeneration) else {
                throw VaultError.tampered(region: "entry row (an older copy, or a row its bucket does not list)")
            }
        }
        guard seenLookups.count == listed else {
            throw VaultError.tampered(region: "entry rows (\(fetched.rows.count) rows, the buckets list \(listed): deleted)")
        }
        return (sum, fetched.rows)
    }

    /// Every entry of a version 3 store, opened, after `fetchAllBuckets`' checks.
    func readAllBuckets(bits: UInt8) async throws -> (generation: UInt64, entries: [VaultEntry]) {
        let fetched = try await fetchAllBuckets(bits: bits)
        let entries = try fetched.rows.map { row in
            try PostgresRowCodec.open(row.sealed, vaultID: vaultID, lookup: row.lookup, rowGeneration: UInt64(row.rowGeneration), keys: keys)
        }
        return (fetched.generation, entries)
    }

    /// Locks what saving `session`'s tokens writes, inside the refresh transaction and before the
    /// refresher runs: both token buckets (ascending, one statement) of a version 3 store, the
    /// state row of a version 1 or 2 store.
    func lockSessionRows(session: String, on connection: PostgresConnection) async throws {
        let vaultID = ByteBuffer(bytes: self.vaultID)
        guard case let .buckets(bits) = layout.withLock({ $0 }) else {
            try await connection.queryIfOpen("SELECT 1 FROM vault_stores WHERE vault_id = \(vaultID) FOR UPDATE", logger: options.logger)
            return
        }
        let buckets = try [SessionEntryNames.accessToken, SessionEntryNames.refreshToken].map { name in
            Int32(bitPattern: PostgresBucket.index(of: try PostgresRowCodec.lookup(owner: session, name: name, keys: keys), bits: bits))
        }
        try await connection.queryIfOpen("""
            SELECT bucket FROM vault_buckets WHERE vault_id = \(vaultID) AND bucket = ANY(\(Array(Set(buckets)).sorted())::integer[])
            ORDER BY bucket FOR UPDATE
            """, logger: options.logger)
    }

    /// A session's two token rows and their bucket rows, in one statement, checked (version 3).
    func readBucketedCredentialRows(accessLookup: [UInt8], refreshLookup: [UInt8], bits: UInt8,
                                    on connection: PostgresConnection) async throws -> (access: VaultEntry?, refresh: VaultEntry?) {
        let accessBucket = PostgresBucket.index(of: accessLookup, bits: bits)
        let refreshBucket = PostgresBucket.index(of: refreshLookup, bits: bits)
        let floors = bucketsSeen.withLock { $0 }
        let vaultID = ByteBuffer(bytes: self.vaultID)
        var answer: (Bool, [UInt8], [UInt8], (Int64, [UInt8])?, (Int64, [UInt8])?)?
        for try await (inRecovery, accessBucketSealed, refreshBucketSealed, accessGeneration, accessSealed, refreshGeneration, refreshSealed)
            in try await connection.queryIfOpen("""
            SELECT pg_catalog.pg_is_in_recovery(), ab.sealed, rb.sealed, a.row_generation, a.sealed, r.row_generation, r.sealed
            FROM vault_buckets ab JOIN vault_buckets rb ON rb.vault_id = ab.vault_id AND rb.bucket = \(Int32(refreshBucket))
            LEFT JOIN vault_entries a ON a.vault_id = ab.vault_id AND a.lookup = \(ByteBuffer(bytes: accessLookup))
            LEFT JOIN vault_entries r ON r.vault_id = ab.vault_id AND r.lookup = \(ByteBuffer(bytes: refreshLookup))
            WHERE ab.vault_id = \(vaultID) AND ab.bucket = \(Int32(accessBucket))
            """, logger: options.logger).decode((Bool, ByteBuffer, ByteBuffer, Int64?, ByteBuffer?, Int64?, ByteBuffer?).self) {
            func row(_ generation: Int64?, _ sealed: ByteBuffer?) -> (Int64, [UInt8])? {
                guard let generation, let sealed else { return nil }
                return (generation, Array(buffer: sealed))
            }
            answer = (inRecovery, Array(buffer: accessBucketSealed), Array(buffer: refreshBucketSealed),
                      row(accessGeneration, accessSealed), row(refreshGeneration, refreshSealed))
        }
        guard let answer else { throw VaultError.tampered(region: "bucket row (missing)") }
        try PostgresBucketRead.refuseStandby(inRecovery: answer.0, configuration: configuration)
        let accessRows = try observeBucket(answer.1, bucket: accessBucket, bits: bits, floor: floors.floor(accessBucket))
        let refreshRows = try observeBucket(answer.2, bucket: refreshBucket, bits: bits, floor: floors.floor(refreshBucket))
        return (try openListedRow(answer.3, lookup: accessLookup, expected: accessRows.rows[accessLookup]),
                try openListedRow(answer.4, lookup: refreshLookup, expected: refreshRows.rows[refreshLookup]))
    }
}
