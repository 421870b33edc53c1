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

    /// The body of a write transaction on a version 3 store, on a connection inside `BEGIN`.
    /// - Returns: each bucket's new generation, and the metadata of every entry put, in order.
    func applyBuckets(_ changes: [Change], bits: UInt8, on connection: PostgresConnection,
                      progress: PostgresProgress?) async throws -> (PostgresCommitted, [EntryMetadata]) {
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
        var buckets: [UInt32: PostgresBucket] = [:]
        for try await (bucket, sealed) in try await connection.query("""
            SELECT bucket, sealed FROM vault_buckets WHERE vault_id = \(vaultID) AND bucket = ANY(\(touched.map { Int32($0) })::integer[])
            ORDER BY bucket FOR UPDATE
            """, logger: logger).decode((Int32, ByteBuffer).self) {
            let number = UInt32(bitPattern: bucket)
            buckets[number] = try observeBucket(Array(buffer: sealed), bucket: number, bits: bits,
                                                floor: bucketsSeen.withLock { $0.floor(number) })
        }
        progress?.tick()
        for bucket in touched where buckets[bucket] == nil {
            throw VaultError.tampered(region: "bucket row \(bucket) (missing)")
        }
        var newGenerations: [UInt32: UInt64] = [:]
        for bucket in touched {
            newGenerations[bucket] = try SecretStore.nextGeneration(after: buckets[bucket]?.generation ?? 0, path: nil)
        }
        let originals = buckets

        // The creation time of every entry replaced (unless the caller gives it): its current row,
        // read and checked against its bucket in one statement.
        var wanted: [[UInt8]] = []
        for (index, change) in changes.enumerated() {
            if case let .put(entry, true) = change, entry.preservedTimestamps == nil,
               originals[PostgresBucket.index(of: lookups[index], bits: bits)]?.rows[lookups[index]] != nil {
                wanted.append(lookups[index])
            }
        }
        var createdAt: [[UInt8]: Date] = [:]
        if !wanted.isEmpty {
            var found: [[UInt8]: (Int64, [UInt8])] = [:]
            for try await (lookup, rowGeneration, sealed) in try await connection.query("""
                SELECT lookup, row_generation, sealed FROM vault_entries
                WHERE vault_id = \(vaultID) AND lookup = ANY(\(wanted.map { ByteBuffer(bytes: $0) })::bytea[])
                """, logger: logger).decode((ByteBuffer, Int64, ByteBuffer).self) {
                found[Array(buffer: lookup)] = (rowGeneration, Array(buffer: sealed))
            }
            progress?.tick()
            for lookup in wanted {
                guard let bucket = originals[PostgresBucket.index(of: lookup, bits: bits)],
                      let entry = try openListedRow(found[lookup].map { ($0.0, $0.1) }, lookup: lookup, bucket: bucket) else {
                    throw VaultError.tampered(region: "entry row (deleted)")
                }
                createdAt[lookup] = entry.metadata.createdAt
            }
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
        if !removed.isEmpty {
            try await connection.query(
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
        var start = 0
        repeat {
            let end = min(start + Self.rowsPerStatement, written.count)
            let batch = written[start..<end]
            let batchLookups = batch.map { ByteBuffer(bytes: $0.0) }
            let batchGenerations = batch.map { Int64(newGenerations[PostgresBucket.index(of: $0.0, bits: bits)] ?? 0) }
            let batchSealed = batch.map { ByteBuffer(bytes: $0.1) }
            if end < written.count {
                try await connection.query("""
                    INSERT INTO vault_entries (vault_id, lookup, row_generation, sealed)
                    SELECT \(vaultID), u.lookup, u.row_generation, u.sealed
                    FROM unnest(\(batchLookups)::bytea[], \(batchGenerations)::bigint[], \(batchSealed)::bytea[]) AS u(lookup, row_generation, sealed)
                    ON CONFLICT (vault_id, lookup) DO UPDATE SET row_generation = EXCLUDED.row_generation, sealed = EXCLUDED.sealed
                    """, logger: logger)
            } else {
                try await connection.query("""
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
