import CredentialVault
import FoundationEssentials
import Logging
import NIOCore
import PostgresNIO
import VaultCrypto

/// Thrown by an optimistic write of one entry whose bucket another writer saved after it was read:
/// nothing was written, and the write is tried again.
struct PostgresBucketMoved: Error {}

extension PostgresSecretStore {
    /// One change of a write transaction.
    enum Change {
        /// Add an entry; fails with `.alreadyExists` when the name is taken (unless `replacing`).
        case put(NewEntry, replacing: Bool)
        /// Remove an entry; fails with `.notFound` when it is not there.
        case remove(name: String, owner: String)
    }

    /// Adds a new entry.
    /// - Throws: `.alreadyExists`, `.invalidInput`, `.tampered`, `.rollbackDetected`, `.serverUnavailable`.
    public func add(_ entry: NewEntry) async throws {
        try await write([.put(entry, replacing: false)])
    }

    /// Adds an entry or replaces the one of the same owner and name (keeping its creation time).
    public func put(_ entry: NewEntry) async throws {
        try await write([.put(entry, replacing: true)])
    }

    /// Adds or replaces every entry of `entries` in one transaction: all are committed or none.
    /// Rows are sent about a thousand per statement; the operation's deadline applies to each
    /// statement, not to the whole, so a large import is not taken for an unavailable server.
    /// - Throws: `.alreadyExists` (when not `replacing`), `.invalidInput`, `.tampered`, `.rollbackDetected`, `.serverUnavailable`.
    public func put(contentsOf entries: [NewEntry], replacing: Bool = true) async throws {
        try await write(entries.map { .put($0, replacing: replacing) })
    }

    /// Removes the entry named `name` of `owner`.
    /// - Throws: `.notFound` when there is none.
    public func remove(named name: String, owner: String = "") async throws {
        try await write([.remove(name: name, owner: owner)])
    }

    /// Applies `changes` in one transaction. Version 3: the buckets of the entries changed are
    /// locked (`SELECT … FOR UPDATE`, ascending), each change is applied at its bucket's generation
    /// + 1 and the buckets are sealed and saved. Versions 1 and 2: the state row is locked, the row
    /// set is checked against it, every change is applied at generation + 1 and the new state is
    /// sealed and saved. Either all changes are committed or none.
    ///
    /// One change to a version 3 store goes without `BEGIN`/`COMMIT` and without a lock: its bucket
    /// is read unlocked and saved only if unchanged (`applyBuckets(optimistic:)`), with the entry and
    /// the commit, by one call of the write procedure (two round trips; three statements where the
    /// procedure is missing), tried `optimisticAttempts` times while other writers keep changing
    /// that bucket, then in a transaction that locks it.
    @discardableResult
    func write(_ changes: [Change]) async throws -> [EntryMetadata] {
        try Self.validate(changes)
        let progress = PostgresProgress()
        let (committed, stored) = try await guarding(progress: progress) {
            let prepared = self.preparedReads.load(ordering: .relaxed)
            do {
                return try await self.send(changes, progress: progress, prepared: prepared)
            } catch where prepared && Self.refusedPreparing(error) {
                // As reads: a pooler that cannot keep named statements has this store write unprepared
                // from now on; a statement whose preparing failed (postgres-nio keeps the failure on its
                // connection) is sent unprepared this once. Nothing was written (a transaction was rolled
                // back; an optimistic write fails before its one writing statement or in it): sent again whole.
                if PostgresEntryRead.isUnsupported(error) {
                    self.preparedReads.store(false, ordering: .relaxed)
                }
                return try await self.send(changes, progress: progress, prepared: false)
            }
        }
        recordCommitted(committed)
        return stored
    }

    /// How many times a write of one entry reads its bucket unlocked and finds it changed by another
    /// writer before it takes the bucket's lock in a transaction instead.
    static let optimisticAttempts = 3

    /// `changes` sent once: one change to a version 3 store optimistically, else (or after
    /// `optimisticAttempts` buckets changed under it) in a transaction.
    private func send(_ changes: [Change], progress: PostgresProgress, prepared: Bool) async throws -> (PostgresCommitted, [EntryMetadata]) {
        let client = self.client
        let logger = options.logger
        if changes.count == 1, case let .buckets(bits) = layout.withLock({ $0 }) {
            var moved = 0
            while moved < Self.optimisticAttempts {
                try Task.checkCancellation()
                do {
                    return try await client.withConnection { connection in
                        try await self.applyBuckets(changes, bits: bits, on: connection, progress: progress,
                                                    prepared: prepared, optimistic: true)
                    }
                } catch is PostgresBucketMoved {
                    moved += 1
                    progress.tick()
                } catch let unavailable as PostgresWriteProcedureUnavailable {
                    // Nothing written: this store writes without the procedure from now on (a store
                    // opened later looks for it again).
                    writesByProcedure.store(false, ordering: .relaxed)
                    logger.notice("vault_bucket_write_v3 is missing or refused here: writes of one entry take three statements",
                                  metadata: ["sqlstate": "\(unavailable.sqlState)"])
                    progress.tick()
                }
            }
        }
        return try await client.withTransaction(logger: logger) { connection in
            try await self.apply(changes, on: connection, progress: progress, prepared: prepared)
        }
    }

    /// True for a server error a prepared statement may meet where the same SQL unprepared may not:
    /// a pooler without named statements (SQLSTATE 26000, 42P05), or a failed Parse that postgres-nio
    /// keeps on its connection (class 42: a table or column missing when first prepared). Never a
    /// timing error (a lock or statement timeout, a deadlock), which is not sent twice.
    static func refusedPreparing(_ error: (any Error)?) -> Bool {
        guard let error = error as? PSQLError, error.code == .server, let state = error.serverInfo?[.sqlState] else { return false }
        return state == "26000" || state.hasPrefix("42")
    }

    /// Records what a committed transaction advanced.
    func recordCommitted(_ committed: PostgresCommitted) {
        switch committed {
        case let .state(state): recordCommitted(state)
        case let .buckets(generations):
            bucketsSeen.withLock { seen in
                for (bucket, generation) in generations { seen.raise(bucket, to: generation) }
            }
        }
    }

    /// Checks every entry put (name, owner, label, secret size) before anything is sent.
    /// - Throws: `.invalidInput`.
    static func validate(_ changes: [Change]) throws {
        for change in changes {
            if case let .put(entry, _) = change {
                try EntryValidation.checkName(entry.name)
                try EntryValidation.checkOwner(entry.owner)
                try EntryValidation.checkLabel(entry.label)
                try EntryValidation.checkAttributes(entry.attributes)
                try EntryValidation.checkSecret(byteCount: entry.secret.count)
            }
        }
    }

    /// The body of a write transaction, on a connection inside `BEGIN`, for the store's layout.
    /// - Returns: What the transaction advanced, and the metadata of every entry put, in order.
    /// `prepared`: a version 3 write of one entry sends named prepared statements.
    func apply(_ changes: [Change], on connection: PostgresConnection,
               progress: PostgresProgress? = nil, prepared: Bool = false) async throws -> (PostgresCommitted, [EntryMetadata]) {
        if case let .buckets(bits) = layout.withLock({ $0 }) {
            return try await applyBuckets(changes, bits: bits, on: connection, progress: progress, prepared: prepared)
        }
        if let (state, stored) = try await applySingle(changes, on: connection, progress: progress) { return (.state(state), stored) }
        // Another process moved the store to version 3 meanwhile; this store now uses it.
        return try await apply(changes, on: connection, progress: progress, prepared: prepared)
    }

    /// The sealed state row of this store, locked (`FOR UPDATE`) until `connection`'s transaction ends.
    /// - Throws: `.notFound` when the row is gone.
    func lockedSealedState(on connection: PostgresConnection, logger: Logger) async throws -> [UInt8] {
        let vaultID = ByteBuffer(bytes: self.vaultID)
        var sealedState: [UInt8]?
        for try await buffer in try await connection.queryIfOpen(
            "SELECT state FROM vault_stores WHERE vault_id = \(vaultID) FOR UPDATE", logger: logger).decode(ByteBuffer.self) {
            sealedState = Array(buffer: buffer)
        }
        guard let sealedState else {
            throw VaultError(.notFound, "the vault's state row is gone from the database", fix: "restore the database or re-create the vault")
        }
        return sealedState
    }

    /// The body of a write transaction on a version 1 or 2 store; nil (nothing written) when the
    /// state turns out to be version 3 (this store then switches to it).
    func applySingle(_ changes: [Change], on connection: PostgresConnection,
                     progress: PostgresProgress? = nil) async throws -> (PostgresVaultState, [EntryMetadata])? {
        let logger = options.logger
        let vaultID = ByteBuffer(bytes: self.vaultID)
        let sealedState = try await lockedSealedState(on: connection, logger: logger)
        if PostgresStateV3.isVersion3(sealedState) {
            try adoptBucketLayout(sealedState)
            return nil
        }
        let state = try PostgresVaultState.open(sealedState, vaultID: self.vaultID, storeName: storeName, keys: keys)
        try Self.checkRollback(state.generation, remembered: generation)
        var rows: [[UInt8]: Int64] = [:]
        // Taken eagerly (`PostgresEagerRows`): every row of the vault spans many reads of the socket.
        for (lookup, rowGeneration) in try await connection.eagerRows(
            "SELECT lookup, row_generation FROM vault_entries WHERE vault_id = \(vaultID)", logger: logger, { row in
                try row.decode((ByteBuffer, Int64).self)
            }) {
            rows[Array(buffer: lookup)] = rowGeneration
        }
        try Self.checkRowSet(rows.map { ($0.key, $0.value) }, against: state)
        progress?.tick()

        let newGeneration = try SecretStore.nextGeneration(after: state.generation, path: nil)
        let now = options.clock()
        var stored: [EntryMetadata] = []
        for change in changes {
            switch change {
            case let .put(entry, replacing):
                let lookup = try PostgresRowCodec.lookup(owner: entry.owner, name: entry.name, keys: keys)
                var createdAt = now
                if let existing = rows[lookup] {
                    guard replacing else { throw VaultError.entryExists(Self.displayName(entry.name, owner: entry.owner)) }
                    if entry.preservedTimestamps == nil {
                        createdAt = try await readRow(lookup: lookup, rowGeneration: existing, on: connection).metadata.createdAt
                    }
                }
                let metadata = EntryMetadata(name: entry.name, owner: entry.owner, kind: entry.kind, label: entry.label,
                                             createdAt: entry.preservedTimestamps?.createdAt ?? createdAt,
                                             updatedAt: entry.preservedTimestamps?.updatedAt ?? now, expiresAt: entry.expiresAt,
                                             transferable: entry.transferable, secretByteCount: entry.secret.count,
                                             attributes: entry.attributes)
                let sealed = try PostgresRowCodec.seal(VaultEntry(metadata: metadata, secret: entry.secret), vaultID: self.vaultID,
                                                       lookup: lookup, rowGeneration: newGeneration, keys: keys)
                let generationColumn = Int64(newGeneration)
                try await connection.queryIfOpen("""
                    INSERT INTO vault_entries (vault_id, lookup, row_generation, sealed)
                    VALUES (\(vaultID), \(ByteBuffer(bytes: lookup)), \(generationColumn), \(ByteBuffer(bytes: sealed)))
                    ON CONFLICT (vault_id, lookup) DO UPDATE SET row_generation = EXCLUDED.row_generation, sealed = EXCLUDED.sealed
                    """, logger: logger)
                progress?.tick()
                rows[lookup] = generationColumn
                stored.append(metadata)
            case let .remove(name, owner):
                let lookup = try PostgresRowCodec.lookup(owner: owner, name: name, keys: keys)
                guard rows[lookup] != nil else { throw VaultError.entryNotFound(Self.displayName(name, owner: owner)) }
                try await connection.queryIfOpen(
                    "DELETE FROM vault_entries WHERE vault_id = \(vaultID) AND lookup = \(ByteBuffer(bytes: lookup))", logger: logger)
                progress?.tick()
                rows[lookup] = nil
            }
        }
        guard rows.count <= VaultLimits.maximumEntries else {
            throw VaultError(.invalidInput, "a vault holds at most \(VaultLimits.maximumEntries) entries",
                             fix: "remove entries you no longer need")
        }
        let newState = try PostgresVaultState.make(generation: newGeneration, rows: rows.mapValues { UInt64($0) })
        try await connection.queryIfOpen("""
            UPDATE vault_stores SET state = \(ByteBuffer(bytes: try newState.sealed(vaultID: self.vaultID, storeName: storeName, keys: keys)))
            WHERE vault_id = \(vaultID)
            """, logger: logger)
        return (newState, stored)
    }

    /// Reads and opens one row inside a transaction.
    func readRow(lookup: [UInt8], rowGeneration: Int64, on connection: PostgresConnection) async throws -> VaultEntry {
        let vaultID = ByteBuffer(bytes: self.vaultID)
        for try await buffer in try await connection.queryIfOpen(
            "SELECT sealed FROM vault_entries WHERE vault_id = \(vaultID) AND lookup = \(ByteBuffer(bytes: lookup))",
            logger: options.logger).decode(ByteBuffer.self) {
            return try PostgresRowCodec.open(Array(buffer: buffer), vaultID: self.vaultID, lookup: lookup,
                                             rowGeneration: UInt64(rowGeneration), keys: keys)
        }
        throw VaultError.tampered(region: "entry rows (a row vanished inside a transaction)")
    }

    static func displayName(_ name: String, owner: String) -> String {
        owner.isEmpty ? name : owner + "/" + name
    }
}
