import CredentialVault
import FoundationEssentials
import NIOCore
import PostgresNIO
import VaultCrypto

/// Writing to a version 3 (bucketed) store: a transaction locks only the bucket rows of the entries
/// it changes (in ascending order, so that writers of several buckets never deadlock), so its
/// cost follows the number of entries written, not the size of the store, and writers of different
/// buckets never wait on each other.
extension PostgresSecretStore {
    /// How many rows one INSERT … SELECT FROM unnest(…) statement sends.
    static let rowsPerStatement = 1_000
    /// Up to this many rows a write may replace, their sealed bytes come with the lock statement.
    static let sealedWithTheLock = 16
    /// From this many buckets locked, a write turns PostgreSQL's JIT compilation off for its transaction.
    static let bucketsWithoutJIT = 64

    /// The body of a write transaction on a version 3 store, on a connection inside `BEGIN`.
    /// A change of one entry (the common case) sends two statements with scalar binds, named and
    /// prepared when `prepared` (`PostgresBucketLock`, then `PostgresBucketEntryPut` or
    /// `PostgresBucketEntryRemove`); several changes send arrays (unnest), unprepared.
    ///
    /// `optimistic` (one change only, on a connection in autocommit, not inside `BEGIN`): the bucket
    /// is read without a lock (`PostgresBucketSnapshot`) and saved only if it is still the row read;
    /// when another writer changed it meanwhile, nothing is written and `PostgresBucketMoved` is thrown.
    /// - Returns: each bucket's new generation, and the metadata of every entry put, in order.
    func applyBuckets(_ changes: [Change], bits: UInt8, on connection: PostgresConnection,
                      progress: PostgresProgress?, prepared: Bool = false,
                      optimistic: Bool = false) async throws -> (PostgresCommitted, [EntryMetadata]) {
        let logger = options.logger
        let vaultID = ByteBuffer(bytes: self.vaultID)
        // Every change's lookup and bucket, computed once. Client work between statements ticks
        // the deadline too (every 1,000 entries): a large import is slow, not an unavailable server.
        let lookups: [[UInt8]] = try changes.enumerated().map { index, change in
            if index % 1_000 == 999 { progress?.tick() }
            switch change {
            case let .put(entry, _): return try PostgresRowCodec.lookup(owner: entry.owner, name: entry.name, keys: keys)
            case let .remove(name, owner): return try PostgresRowCodec.lookup(owner: owner, name: name, keys: keys)
            }
        }
        let touched = Set(lookups.map { PostgresBucket.index(of: $0, bits: bits) }).sorted()
        // The rows whose sealed bytes are needed: those a put may replace without the caller's timestamps.
        var candidates: [[UInt8]] = []
        for (index, change) in changes.enumerated() {
            if case let .put(entry, true) = change, entry.preservedTimestamps == nil { candidates.append(lookups[index]) }
        }
        // One statement locks the buckets (ascending, so that writers of several buckets never
        // deadlock) and reads every row of them: each bucket's listing is checked against all of its
        // rows before it is sealed forward, so an older bucket row put back alone is refused here,
        // not sealed forward by a writer that never saw the newer one (docs/SECURITY.md).
        let single = changes.count == 1 && touched.count == 1
        let optimistic = optimistic && single   // only one change goes without a transaction
        // The sealed bytes of a few replaced rows come with the lock statement; of many (an import
        // over existing entries), by a statement of their own after it, for the rows that exist:
        // `lookup = ANY(all of them)` on every row of hundreds of buckets costs more than the scan.
        let inlineSealed = candidates.count <= Self.sealedWithTheLock ? candidates : []
        if touched.count >= Self.bucketsWithoutJIT {
            // The planner prices each bucket's range scan at thousands of rows (a range of a bytea
            // parameter), so a statement over a few hundred buckets goes over jit_above_cost and
            // spends 0.1 s or more compiling for a scan of 25 rows a bucket; and while a bulk import
            // grows the table faster than autovacuum analyzes it, the statistics of a small table
            // make a sequential scan of all the vault's entry rows, materialized to disk, look
            // cheaper than the index ranges (an import of 100,000 entries took over a minute).
            // For this transaction only: its statements all have the primary key indexes to use.
            try await connection.queryIfOpen(
                "SELECT pg_catalog.set_config('jit', 'off', true), pg_catalog.set_config('enable_seqscan', 'off', true)", logger: logger)
        }
        // Unlocked, the rollback rule's floor is the one held before the statement was sent: the
        // row comes from the statement's snapshot, which may predate a write this process has
        // since seen. Locked, the row is the newest committed: the floor held after it (stricter).
        let floorsBefore = optimistic ? bucketsSeen.withLock { seen in Dictionary(uniqueKeysWithValues: touched.map { ($0, seen.floor($0)) }) } : [:]
        let locked = single
            ? try await lockAndReadBucket(touched[0], bits: bits, sealedOf: candidates.first, prepared: prepared,
                                          locking: !optimistic, on: connection)
            : try await lockAndReadBuckets(touched, bits: bits, sealedOf: inlineSealed, on: connection)
        var buckets: [UInt32: PostgresBucket] = [:]
        for (number, sealed) in locked.buckets {
            let floor = optimistic ? floorsBefore[number] ?? 0 : bucketsSeen.withLock { $0.floor(number) }
            buckets[number] = try observeBucket(sealed, bucket: number, bits: bits, floor: floor)
        }
        progress?.tick()
        for bucket in touched where buckets[bucket] == nil {
            throw VaultError.tampered(region: "bucket row \(bucket) (missing)")
        }
        var rows = locked.rows
        if !Self.rowsMatch(rows, buckets: buckets) {
            // The rows came from the statement's snapshot, taken before it waited for a lock another
            // writer held: read them again now that the locks are held, then they must match.
            // Unlocked, the bucket row and the rows came from one snapshot, which every writer
            // changes in one commit: they must match as read.
            guard !optimistic else {
                throw VaultError.tampered(region: "entry rows (a bucket's listing does not match its rows: an older bucket row or entry row put back, or rows added or deleted)")
            }
            rows = try await readBucketRows(touched, bits: bits, sealedOf: inlineSealed, on: connection)
            progress?.tick()
            guard Self.rowsMatch(rows, buckets: buckets) else {
                throw VaultError.tampered(region: "entry rows (a bucket's listing does not match its rows: an older bucket row or entry row put back, or rows added or deleted)")
            }
        }
        if candidates.count > Self.sealedWithTheLock {
            try await readSealed(of: Array(Set(candidates.filter { rows[$0] != nil })), into: &rows, on: connection)
            progress?.tick()
        }
        var newGenerations: [UInt32: UInt64] = [:]
        for bucket in touched {
            newGenerations[bucket] = try SecretStore.nextGeneration(after: buckets[bucket]?.generation ?? 0, path: nil)
        }
        let originals = buckets

        // The creation time of every entry replaced (unless the caller gives it), from its checked row.
        var createdAt: [[UInt8]: Date] = [:]
        for lookup in candidates {
            guard let bucket = originals[PostgresBucket.index(of: lookup, bits: bits)], bucket.rows[lookup] != nil,
                  let row = rows[lookup], let sealed = row.sealed else { continue }
            let entry = try PostgresRowCodec.open(sealed, vaultID: self.vaultID, lookup: lookup, rowGeneration: UInt64(row.generation), keys: keys)
            createdAt[lookup] = entry.metadata.createdAt
        }

        // The changes in order, on the opened buckets; the rows each lookup ends with.
        let now = options.clock()
        var stored: [EntryMetadata] = []
        var finalRows: [[UInt8]: [UInt8]?] = [:]   // lookup → sealed row, or nil for removed
        for (index, change) in changes.enumerated() {
            if index % 1_000 == 999 { progress?.tick() }
            let lookup = lookups[index]
            let number = PostgresBucket.index(of: lookup, bits: bits)
            let generation = newGenerations[number] ?? 0
            switch change {
            case let .put(entry, replacing):
                if buckets[number]?.rows[lookup] != nil {
                    guard replacing else { throw VaultError.entryExists(Self.displayName(entry.name, owner: entry.owner)) }
                } else {
                    createdAt[lookup] = nil
                }
                let metadata = EntryMetadata(name: entry.name, owner: entry.owner, kind: entry.kind, label: entry.label,
                                             createdAt: entry.preservedTimestamps?.createdAt ?? createdAt[lookup] ?? now,
                                             updatedAt: entry.preservedTimestamps?.updatedAt ?? now, expiresAt: entry.expiresAt,
                                             transferable: entry.transferable, secretByteCount: entry.secret.count,
                                             attributes: entry.attributes)
                createdAt[lookup] = metadata.createdAt
                finalRows[lookup] = .some(try PostgresRowCodec.seal(VaultEntry(metadata: metadata, secret: entry.secret), vaultID: self.vaultID,
                                                                    lookup: lookup, rowGeneration: generation, keys: keys))
                buckets[number]?.rows[lookup] = generation
                stored.append(metadata)
            case let .remove(name, owner):
                guard buckets[number]?.rows[lookup] != nil else { throw VaultError.entryNotFound(Self.displayName(name, owner: owner)) }
                buckets[number]?.rows[lookup] = nil
                finalRows[lookup] = .some(nil)
            }
        }
        progress?.tick()
        for (number, bucket) in buckets {
            guard bucket.rows.count <= VaultLimits.maximumEntries else {
                throw VaultError(.invalidInput, "a vault holds at most \(VaultLimits.maximumEntries) entries",
                                 fix: "remove entries you no longer need")
            }
            buckets[number]?.generation = newGenerations[number] ?? bucket.generation
        }

        // Rows removed (that were there before this transaction), then rows written, in batches, then the buckets.
        let removed = finalRows.compactMap { lookup, sealed in
            sealed == nil && originals[PostgresBucket.index(of: lookup, bits: bits)]?.rows[lookup] != nil ? ByteBuffer(bytes: lookup) : nil
        }
        if !single, !removed.isEmpty {
            try await connection.queryIfOpen(
                "DELETE FROM vault_entries WHERE vault_id = \(vaultID) AND lookup = ANY(\(removed)::bytea[])", logger: logger)
            progress?.tick()
        }
        let written = finalRows.compactMap { lookup, sealed in sealed.map { (lookup, $0) } }
        // The buckets, each sealed at its new generation; sent with the last batch of rows, in one
        // statement (a data-modifying WITH): a put is BEGIN, lock, read the row it replaces, write, COMMIT.
        let numbers = touched.map { Int32(bitPattern: $0) }
        let sealedBuckets = try touched.map { number in
            ByteBuffer(bytes: try (buckets[number] ?? PostgresBucket(generation: 0, rows: [:]))
                .sealed(vaultID: self.vaultID, storeName: storeName, bucket: number, keys: keys))
        }
        if single {
            guard let (lookup, sealed) = finalRows.first, let previous = locked.buckets[touched[0]] else {
                throw VaultError.tampered(region: "bucket row \(touched[0]) (missing)")   // checked above; never sealed unconditionally
            }
            let rowGeneration = Int64(newGenerations[touched[0]] ?? 0)
            let byProcedure = optimistic && writesByProcedure.load(ordering: .relaxed)
            let saved = try await writeOneEntry(lookup: lookup, sealed: sealed, rowGeneration: rowGeneration, bucket: numbers[0],
                                                sealedBucket: sealedBuckets[0], previousBucket: ByteBuffer(bytes: previous),
                                                byProcedure: byProcedure, prepared: prepared, on: connection)
            progress?.tick()
            guard saved else {
                // Read without a lock: another writer saved the bucket since; nothing was written.
                if optimistic { throw PostgresBucketMoved() }
                throw VaultError.tampered(region: "bucket row \(touched[0]) (changed while locked)")
            }
            if optimistic && !byProcedure {
                // In autocommit the server commits at the statement's Sync, after its rows and
                // CommandComplete, which is where postgres-nio ends the statement: the commit (with
                // the wait for a synchronous standby) is done, or failed, only when the connection is
                // ready again. The next statement on it waits for that; a failed commit fails it.
                // Unprepared: an error here must never be one that has the write sent again
                // (`refusedPreparing`), as the write may have been committed.
                // Sent only on an open connection (`PostgresOpenSend`): postgres-nio closes it on the
                // error of a failed commit, and a statement written after that would wait forever.
                try await connection.commandIfOpen("SELECT 1", logger: options.logger)
                progress?.tick()
            }
            return (.buckets(newGenerations), stored)
        }
        var start = 0
        repeat {
            let end = min(start + Self.rowsPerStatement, written.count)
            let batch = written[start..<end]
            let batchLookups = batch.map { ByteBuffer(bytes: $0.0) }
            let batchGenerations = batch.map { Int64(newGenerations[PostgresBucket.index(of: $0.0, bits: bits)] ?? 0) }
            let batchSealed = batch.map { ByteBuffer(bytes: $0.1) }
            if end < written.count {
                try await connection.queryIfOpen("""
                    INSERT INTO vault_entries (vault_id, lookup, row_generation, sealed)
                    SELECT \(vaultID), u.lookup, u.row_generation, u.sealed
                    FROM unnest(\(batchLookups)::bytea[], \(batchGenerations)::bigint[], \(batchSealed)::bytea[]) AS u(lookup, row_generation, sealed)
                    ON CONFLICT (vault_id, lookup) DO UPDATE SET row_generation = EXCLUDED.row_generation, sealed = EXCLUDED.sealed
                    """, logger: logger)
            } else {
                try await connection.queryIfOpen("""
                    WITH written AS (
                        INSERT INTO vault_entries (vault_id, lookup, row_generation, sealed)
                        SELECT \(vaultID), u.lookup, u.row_generation, u.sealed
                        FROM unnest(\(batchLookups)::bytea[], \(batchGenerations)::bigint[], \(batchSealed)::bytea[]) AS u(lookup, row_generation, sealed)
                        ON CONFLICT (vault_id, lookup) DO UPDATE SET row_generation = EXCLUDED.row_generation, sealed = EXCLUDED.sealed
                    )
                    UPDATE vault_buckets b SET sealed = u.sealed
                    FROM unnest(\(numbers)::integer[], \(sealedBuckets)::bytea[]) AS u(bucket, sealed)
                    WHERE b.vault_id = \(vaultID) AND b.bucket = u.bucket
                    """, logger: logger)
            }
            progress?.tick()
            start = end
        } while start < written.count
        return (.buckets(newGenerations), stored)
    }
}

/// The rows of the buckets a write locks, read to check each bucket's listing against all of its rows.
extension PostgresSecretStore {
    /// One entry row of a locked bucket: its generation, and its sealed bytes when asked for.
    struct LockedRow {
        var generation: Int64
        var sealed: [UInt8]?
    }

    /// The lookups of bucket `bucket` lie in [low, high): its first 4 bytes, big-endian, are
    /// `bucket` shifted left by 32 − `bits` (bytea compares byte by byte, then by length; the last
    /// bucket's bound is 33 bytes of 0xFF, above every 32-byte lookup). The primary key index serves it.
    static func lookupRange(of bucket: UInt32, bits: UInt8) -> (low: [UInt8], high: [UInt8]) {
        func bytes(_ value: UInt32) -> [UInt8] { [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)] }
        let shift = 32 - UInt32(bits)
        let low = bytes(bucket << shift)
        let last = (UInt64(bucket) + 1) << UInt64(shift) > UInt64(UInt32.max)
        return (low, last ? [UInt8](repeating: 0xFF, count: 33) : bytes((bucket + 1) << shift))
    }

    /// Locks `buckets` (ascending) and reads them with every entry row in them, in one statement.
    /// Each bucket's rows are a subquery of their own (`OFFSET 0` keeps the planner from making it a
    /// join): an index range scan per bucket, never one scan of all the vault's rows materialized.
    /// The entry rows come from the statement's snapshot: when it waited for a lock, they may be
    /// older than the bucket rows (which are the latest, as FOR UPDATE returns them).
    func lockAndReadBuckets(_ buckets: [UInt32], bits: UInt8, sealedOf wanted: [[UInt8]],
                            on connection: PostgresConnection) async throws -> (buckets: [UInt32: [UInt8]], rows: [[UInt8]: LockedRow]) {
        let vaultID = ByteBuffer(bytes: self.vaultID)
        let ranges = buckets.map { Self.lookupRange(of: $0, bits: bits) }
        var sealedBuckets: [UInt32: [UInt8]] = [:]
        var rows: [[UInt8]: LockedRow] = [:]
        // Taken eagerly (`PostgresEagerRows`): the rows of many buckets span many reads of the socket.
        for (bucket, bucketSealed, lookup, rowGeneration, sealed) in try await connection.eagerRows("""
            WITH locked AS (
                SELECT bucket, sealed FROM vault_buckets
                WHERE vault_id = \(vaultID) AND bucket = ANY(\(buckets.map { Int32(bitPattern: $0) })::integer[])
                ORDER BY bucket FOR UPDATE
            )
            SELECT l.bucket, l.sealed, NULL::bytea, NULL::bigint, NULL::bytea FROM locked l
            UNION ALL
            SELECT NULL::integer, NULL::bytea, e.lookup, e.row_generation,
                   CASE WHEN e.lookup = ANY(\(wanted.map { ByteBuffer(bytes: $0) })::bytea[])
                        THEN (SELECT w.sealed FROM vault_entries w WHERE w.vault_id = \(vaultID) AND w.lookup = e.lookup LIMIT 1) END
            FROM unnest(\(ranges.map { ByteBuffer(bytes: $0.low) })::bytea[], \(ranges.map { ByteBuffer(bytes: $0.high) })::bytea[]) AS r(low, high)
            CROSS JOIN LATERAL (SELECT e.lookup, e.row_generation FROM vault_entries e
                                WHERE e.vault_id = \(vaultID) AND e.lookup >= r.low AND e.lookup < r.high OFFSET 0) e
            """, logger: options.logger, { row in try row.decode((Int32?, ByteBuffer?, ByteBuffer?, Int64?, ByteBuffer?).self) }) {
            if let bucket, let bucketSealed {
                sealedBuckets[UInt32(bitPattern: bucket)] = Array(buffer: bucketSealed)
            } else if let lookup, let rowGeneration {
                try Self.insertRow(&rows, lookup: Array(buffer: lookup), generation: rowGeneration, sealed: sealed)
            }
        }
        return (sealedBuckets, rows)
    }

    /// As `lockAndReadBuckets`, for one bucket: `PostgresBucketLock`, with scalar binds, named and
    /// prepared when `prepared` (else the same SQL unprepared); without the lock when not `locking`
    /// (`PostgresBucketSnapshot`: every row from one snapshot).
    func lockAndReadBucket(_ bucket: UInt32, bits: UInt8, sealedOf wanted: [UInt8]?, prepared: Bool, locking: Bool = true,
                           on connection: PostgresConnection) async throws -> (buckets: [UInt32: [UInt8]], rows: [[UInt8]: LockedRow]) {
        let range = Self.lookupRange(of: bucket, bits: bits)
        let statement = PostgresBucketLock(vaultID: ByteBuffer(bytes: vaultID), bucket: Int32(bitPattern: bucket),
                                           low: ByteBuffer(bytes: range.low), high: ByteBuffer(bytes: range.high),
                                           sealedOf: wanted.map { ByteBuffer(bytes: $0) })
        var sealedBuckets: [UInt32: [UInt8]] = [:]
        var rows: [[UInt8]: LockedRow] = [:]
        func take(_ row: PostgresBucketLock.Row) throws {
            if let bucketSealed = row.0 {
                guard sealedBuckets[bucket] == nil else { throw VaultError.tampered(region: "bucket row \(bucket) (twice)") }
                sealedBuckets[bucket] = Array(buffer: bucketSealed)
            } else if let lookup = row.1, let rowGeneration = row.2 {
                try Self.insertRow(&rows, lookup: Array(buffer: lookup), generation: rowGeneration, sealed: row.3)
            }
        }
        switch (prepared, locking) {
        case (true, true):
            for try await row in try await connection.executeIfOpen(statement, logger: options.logger) { try take(row) }
        case (true, false):
            for try await row in try await connection.executeIfOpen(PostgresBucketSnapshot(read: statement), logger: options.logger) { try take(row) }
        case (false, true):
            let query = PostgresQuery(unsafeSQL: PostgresBucketLock.sql, binds: try statement.makeBindings())
            for try await row in try await connection.queryIfOpen(query, logger: options.logger) { try take(try statement.decodeRow(row)) }
        case (false, false):
            let snapshot = PostgresBucketSnapshot(read: statement)
            let query = PostgresQuery(unsafeSQL: PostgresBucketSnapshot.sql, binds: try snapshot.makeBindings())
            for try await row in try await connection.queryIfOpen(query, logger: options.logger) { try take(try snapshot.decodeRow(row)) }
        }
        return (sealedBuckets, rows)
    }

    /// The write of one entry (`sealed`, or nil to remove it) and its bucket row, saved only if the
    /// bucket row is still `previousBucket`: `byProcedure`, one call of the write procedure
    /// (`PostgresBucketWriteCall`, which also commits: answered once committed), else one statement,
    /// `PostgresBucketEntryPut` or `PostgresBucketEntryRemove`; named and prepared when `prepared`.
    /// - Returns: false when the bucket row was no longer `previousBucket` (nothing written).
    /// - Throws: `PostgresWriteProcedureUnavailable` when the procedure cannot be used here (nothing
    ///   written); `.tampered` when it saved more than one bucket row (the primary key dropped and a
    ///   row doubled): committed all the same, so the error must not have the write sent again.
    func writeOneEntry(lookup: [UInt8], sealed: [UInt8]?, rowGeneration: Int64, bucket: Int32, sealedBucket: ByteBuffer,
                       previousBucket: ByteBuffer, byProcedure: Bool, prepared: Bool, on connection: PostgresConnection) async throws -> Bool {
        let write = PostgresBucketWrite(vaultID: ByteBuffer(bytes: vaultID), lookup: ByteBuffer(bytes: lookup), rowGeneration: rowGeneration,
                                        sealed: sealed.map { ByteBuffer(bytes: $0) }, bucket: bucket, sealedBucket: sealedBucket,
                                        previousBucket: previousBucket)
        let count: Int64?
        if byProcedure {
            do {
                count = try await savedCount(of: PostgresBucketWriteCall(write: write), prepared: prepared, on: connection)
            } catch let error as PSQLError where PostgresBucketWriteCall.isUnavailable(error) {
                throw PostgresWriteProcedureUnavailable(sqlState: error.serverInfo?[.sqlState] ?? "?")
            }
        } else if sealed == nil {
            count = try await savedCount(of: PostgresBucketEntryRemove(write: write), prepared: prepared, on: connection)
        } else {
            count = try await savedCount(of: PostgresBucketEntryPut(write: write), prepared: prepared, on: connection)
        }
        guard let count else { throw VaultError.tampered(region: "bucket row \(bucket) (its write answered no count)") }
        guard count <= 1 else { throw VaultError.tampered(region: "bucket row \(bucket) (twice)") }
        return count == 1
    }

    /// The one number a compare-and-set write answers, sent prepared or unprepared; nil when no row came.
    private func savedCount<S: PostgresBucketWriteStatement>(of statement: S, prepared: Bool,
                                                             on connection: PostgresConnection) async throws -> Int64? {
        var count: Int64?
        if prepared {
            for try await row in try await connection.executeIfOpen(statement, logger: options.logger) { count = row }
        } else {
            for try await row in try await connection.queryIfOpen(PostgresQuery(unsafeSQL: S.sql, binds: try statement.makeBindings()),
                                                            logger: options.logger) {
                count = try statement.decodeRow(row)
            }
        }
        return count
    }

    /// The sealed bytes of `lookups` (rows of buckets this transaction locked, checked), by primary key.
    func readSealed(of lookups: [[UInt8]], into rows: inout [[UInt8]: LockedRow], on connection: PostgresConnection) async throws {
        guard !lookups.isEmpty else { return }
        let vaultID = ByteBuffer(bytes: self.vaultID)
        for (lookup, sealed) in try await connection.eagerRows("""
            SELECT lookup, sealed FROM vault_entries WHERE vault_id = \(vaultID) AND lookup = ANY(\(lookups.map { ByteBuffer(bytes: $0) })::bytea[])
            """, logger: options.logger, { row in try row.decode((ByteBuffer, ByteBuffer).self) }) {
            rows[Array(buffer: lookup)]?.sealed = Array(buffer: sealed)
        }
        for lookup in lookups where rows[lookup]?.sealed == nil {
            throw VaultError.tampered(region: "entry rows (a row vanished inside a transaction)")
        }
    }

    /// Every entry row of `buckets` (already locked by this transaction), read by a statement of its own.
    func readBucketRows(_ buckets: [UInt32], bits: UInt8, sealedOf wanted: [[UInt8]],
                        on connection: PostgresConnection) async throws -> [[UInt8]: LockedRow] {
        let vaultID = ByteBuffer(bytes: self.vaultID)
        let ranges = buckets.map { Self.lookupRange(of: $0, bits: bits) }
        var rows: [[UInt8]: LockedRow] = [:]
        for (lookup, rowGeneration, sealed) in try await connection.eagerRows("""
            SELECT e.lookup, e.row_generation, CASE WHEN e.lookup = ANY(\(wanted.map { ByteBuffer(bytes: $0) })::bytea[])
                THEN (SELECT w.sealed FROM vault_entries w WHERE w.vault_id = \(vaultID) AND w.lookup = e.lookup LIMIT 1) END
            FROM unnest(\(ranges.map { ByteBuffer(bytes: $0.low) })::bytea[], \(ranges.map { ByteBuffer(bytes: $0.high) })::bytea[]) AS r(low, high)
            CROSS JOIN LATERAL (SELECT e.lookup, e.row_generation FROM vault_entries e
                                WHERE e.vault_id = \(vaultID) AND e.lookup >= r.low AND e.lookup < r.high OFFSET 0) e
            """, logger: options.logger, { row in try row.decode((ByteBuffer, Int64, ByteBuffer?).self) }) {
            try Self.insertRow(&rows, lookup: Array(buffer: lookup), generation: rowGeneration, sealed: sealed)
        }
        return rows
    }

    /// Adds one row read; a lookup twice (the primary key dropped) is tampering.
    private static func insertRow(_ rows: inout [[UInt8]: LockedRow], lookup: [UInt8], generation: Int64, sealed: ByteBuffer?) throws {
        guard rows[lookup] == nil else { throw VaultError.tampered(region: "entry rows (a lookup twice)") }
        rows[lookup] = LockedRow(generation: generation, sealed: sealed.map { Array(buffer: $0) })
    }

    /// True when the rows are exactly those the buckets list, each at its listed generation
    /// (none missing, none extra, none older or newer).
    static func rowsMatch(_ rows: [[UInt8]: LockedRow], buckets: [UInt32: PostgresBucket]) -> Bool {
        var listed = 0
        for bucket in buckets.values {
            listed += bucket.rows.count
            for (lookup, generation) in bucket.rows {
                guard let row = rows[lookup], row.generation >= 1, UInt64(row.generation) == generation else { return false }
            }
        }
        return rows.count == listed
    }
}
