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
        let floor = generation
        let fetched = try await fetchAllRows()
        let state = try observe(PostgresVaultState.open(fetched.state, vaultID: vaultID, storeName: storeName, keys: keys), seenBefore: floor)
        try Self.checkRowSet(fetched.rows.map { ($0.lookup, $0.rowGeneration) }, against: state)
        var failures: [VerificationReport.Failure] = []
        for row in fetched.rows {
            do {
                _ = try PostgresRowCodec.open(row.sealed, vaultID: vaultID, lookup: row.lookup,
                                              rowGeneration: UInt64(row.rowGeneration), keys: keys)
            } catch let error as VaultError {
                failures.append(.init(owner: "", name: "row " + row.lookup.prefix(8).hexString, error: error))
            }
        }
        return VerificationReport(vaultID: vaultID.hexString, generation: state.generation,
                                  entriesChecked: fetched.rows.count, failures: failures)
    }
}
