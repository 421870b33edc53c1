import CredentialVault
import FoundationEssentials
import NIOCore
import VaultCrypto

/// PostgreSQL as the second implementation of the storage seam (`SecretStorage`, in `CredentialVault`).
extension PostgresSecretStore: SecretStorage {
    package var storageKind: StorageKind { .postgres }

    package var storageGeneration: UInt64 { generation }

    package func listEntries(owner: String?) async throws -> [EntryMetadata] {
        try await list(owner: owner)
    }

    package func readEntry(named name: String, owner: String) async throws -> VaultEntry {
        try await entry(named: name, owner: owner)
    }

    package func storeEntries(_ entries: [NewEntry], replace: Bool) async throws -> [EntryMetadata] {
        try await write(entries.map { .put($0, replacing: replace) })
    }

    package func removeEntry(named name: String, owner: String) async throws {
        try await remove(named: name, owner: owner)
    }

    package func verifyAll() async throws -> VerificationReport {
        try await verify()
    }

    package func closeStorage() async {
        await close()
    }
}

extension PostgresSecretStore {
    /// Checks the sealed state and the row set (a missing, added or rolled-back row throws
    /// `.tampered`), then opens every row, listing each that fails instead of stopping at the first
    /// (as `SecretStore.verify()`). A row that does not open has no readable name: it is reported
    /// by its lookup's first bytes.
    /// - Returns: the report: the generation verified, how many rows were checked, which failed.
    /// - Throws: `.tampered` for the state or the row set, `.rollbackDetected`, `.serverUnavailable`.
    public func verify() async throws -> VerificationReport {
        if case let .buckets(bits) = layout.withLock({ $0 }) {
            let fetched = try await fetchAllBuckets(bits: bits)
            return VerificationReport(vaultID: vaultID.hexString, generation: fetched.generation, entriesChecked: fetched.rows.count,
                                      failures: openEach(fetched.rows.map { ($0.lookup, $0.rowGeneration, $0.sealed) }))
        }
        let floor = generation
        let fetched = try await fetchAllRows()
        if PostgresStateV3.isVersion3(fetched.state) {
            try adoptBucketLayout(fetched.state)
            return try await verify()
        }
        let state = try observe(PostgresVaultState.open(fetched.state, vaultID: vaultID, storeName: storeName, keys: keys), seenBefore: floor)
        try Self.checkRowSet(fetched.rows.map { ($0.lookup, $0.rowGeneration) }, against: state)
        return VerificationReport(vaultID: vaultID.hexString, generation: state.generation, entriesChecked: fetched.rows.count,
                                  failures: openEach(fetched.rows.map { ($0.lookup, $0.rowGeneration, $0.sealed) }))
    }

    /// Opens every row, listing each that fails (by its lookup's first bytes) instead of stopping.
    private func openEach(_ rows: [(lookup: [UInt8], rowGeneration: Int64, sealed: [UInt8])]) -> [VerificationReport.Failure] {
        var failures: [VerificationReport.Failure] = []
        for row in rows {
            do {
                _ = try PostgresRowCodec.open(row.sealed, vaultID: vaultID, lookup: row.lookup,
                                              rowGeneration: UInt64(row.rowGeneration), keys: keys)
            } catch let error as VaultError {
                failures.append(.init(owner: "", name: "row " + row.lookup.prefix(8).hexString, error: error))
            } catch {
                failures.append(.init(owner: "", name: "row " + row.lookup.prefix(8).hexString, error: VaultError.tampered(region: "entry row")))
            }
        }
        return failures
    }
}
