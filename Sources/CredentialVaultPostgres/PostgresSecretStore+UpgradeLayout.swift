import CredentialVault
import FoundationEssentials
import NIOCore
import PostgresNIO
import VaultCrypto

extension PostgresSecretStore {
    /// Moves a store written by an earlier release (state version 1 or 2: one state row listing
    /// every entry) to the bucketed layout, version 3, in one transaction: the state row is locked,
    /// every row is checked against it (as `list()` does), the bucket rows are built (each at the
    /// old generation; the entry rows keep their generation and are not re-sealed) and the state
    /// is rewritten as version 3. Releases before version 3 refuse the store afterwards
    /// (an unsupported state version); a store already at version 3 is left as it is.
    /// - Returns: the version before and after, and whether anything was written.
    /// - Throws: `.tampered`, `.rollbackDetected`, `.unsupportedVersion`, `.serverUnavailable`.
    public func upgradeLayout() async throws -> (previousVersion: Int, version: Int, changed: Bool) {
        let client = self.client
        let logger = options.logger
        let bits = options.bucketBits
        guard PostgresStateV3.bucketBitsRange.contains(bits) else {
            throw VaultError(.invalidInput, "a store has between 2^4 and 2^16 buckets")
        }
        let progress = PostgresProgress()
        let outcome: (previous: Int, bits: UInt8, generation: UInt64?) = try await guarding(progress: progress) {
            try await client.withTransaction(logger: logger) { connection in
                self.writesByProcedure.store(try await Self.ensureSchema(connection, logger: logger), ordering: .relaxed)
                let vaultID = ByteBuffer(bytes: self.vaultID)
                let sealedState = try await self.lockedSealedState(on: connection, logger: logger)
                if PostgresStateV3.isVersion3(sealedState) {
                    let state = try PostgresStateV3.open(sealedState, vaultID: self.vaultID, storeName: self.storeName, keys: self.keys)
                    return (3, state.bucketBits, nil)
                }
                let state = try PostgresVaultState.open(sealedState, vaultID: self.vaultID, storeName: self.storeName, keys: self.keys)
                try Self.checkRollback(state.generation, remembered: self.singleStateGeneration)
                var rows: [[UInt8]: Int64] = [:]
                // Taken eagerly (`PostgresEagerRows`): every row of the vault spans many reads of the socket.
                for (lookup, rowGeneration) in try await connection.eagerRows(
                    "SELECT lookup, row_generation FROM vault_entries WHERE vault_id = \(vaultID)", logger: logger, { row in
                        try row.decode((ByteBuffer, Int64).self)
                    }) {
                    // A lookup twice (the primary key dropped) is tampering, not one row.
                    guard rows.updateValue(rowGeneration, forKey: Array(buffer: lookup)) == nil else {
                        throw VaultError.tampered(region: "entry rows (a lookup twice)")
                    }
                }
                progress.tick()
                try Self.checkRowSet(rows.map { ($0.key, $0.value) }, against: state)
                var buckets = [PostgresBucket](repeating: PostgresBucket(generation: state.generation, rows: [:]), count: 1 << Int(bits))
                for (lookup, rowGeneration) in rows {
                    buckets[Int(PostgresBucket.index(of: lookup, bits: bits))].rows[lookup] = UInt64(rowGeneration)
                }
                let sealed = try buckets.enumerated().map { bucket, rows in
                    try rows.sealed(vaultID: self.vaultID, storeName: self.storeName, bucket: UInt32(bucket), keys: self.keys)
                }
                // No bucket rows of a version 2 store are valid; any there (left by hand) go.
                try await connection.queryIfOpen("DELETE FROM vault_buckets WHERE vault_id = \(vaultID)", logger: logger)
                try await Self.insertBuckets(sealed, vaultID: self.vaultID, on: connection, logger: logger)
                progress.tick()
                let newState = try PostgresStateV3(bucketBits: bits).sealed(vaultID: self.vaultID, storeName: self.storeName, keys: self.keys)
                try await connection.queryIfOpen(
                    "UPDATE vault_stores SET state = \(ByteBuffer(bytes: newState)) WHERE vault_id = \(vaultID)", logger: logger)
                return (state.rowGenerations == nil ? 1 : 2, bits, Optional(state.generation))
            }
        }
        layout.withLock { $0 = .buckets(bits: outcome.bits) }
        if let generation = outcome.generation {
            bucketsSeen.withLock { seen in
                for bucket in 0..<UInt32(1 << Int(outcome.bits)) { seen.raise(bucket, to: generation) }
            }
        }
        return (outcome.previous, 3, outcome.generation != nil)
    }

    /// The highest generation seen of a version 1 or 2 state (0 once the store uses buckets).
    fileprivate var singleStateGeneration: UInt64 {
        if case .single = layout.withLock({ $0 }) { return generation }
        return 0
    }
}

/// `vault upgrade-format` on a PostgreSQL selection moves the store to layout version 3.
extension PostgresSecretStore: StoreLayoutUpgrading {}
