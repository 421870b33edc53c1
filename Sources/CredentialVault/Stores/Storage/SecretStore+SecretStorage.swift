/// The vault file as one implementation of the storage seam. Each requirement is the store's own
/// synchronous operation (the file is read and replaced under `flock`; nothing awaits).
extension SecretStore: SecretStorage {
    package var storageKind: StorageKind { .file }

    package var storageGeneration: UInt64 { generation }

    package func listEntries(owner: String?) async throws -> [EntryMetadata] {
        try list(owner: owner)
    }

    package func readEntry(named name: String, owner: String) async throws -> VaultEntry {
        try entry(named: name, owner: owner)
    }

    package func storeEntries(_ entries: [NewEntry], replace: Bool) async throws -> [EntryMetadata] {
        try await storeEntries(entries, replace: replace, writer: .unspecified)
    }

    package func storeEntries(_ entries: [NewEntry], replace: Bool, writer: EntryWriter) async throws -> [EntryMetadata] {
        try update(as: writer) { transaction in
            try entries.map { try transaction.put($0, replace: replace) }
        }
    }

    package func removeEntry(named name: String, owner: String) async throws {
        try remove(named: name, owner: owner)
    }

    package func verifyAll() async throws -> VerificationReport {
        try verify()
    }

    package func closeStorage() async {}
}
