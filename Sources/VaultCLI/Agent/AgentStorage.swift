import CredentialVault
import Synchronization

/// The entry commands' storage when a `vault agent` holds the vault unlocked: every operation is a
/// request to the agent, which holds the key; this process never has it.
///
/// When the agent does not hold the vault (never unlocked, locked or timed out meanwhile) or does not
/// answer (it died: a warning says so), the first operation that finds out falls back to the direct
/// path (`fallback`: the key from `$VAULT_KEY_FILE`, `$VAULT_PASSPHRASE` or a prompt) and every later
/// one stays there. A request the agent refused for another reason is that request's error.
final class AgentStorage: SecretStorage, Sendable {
    private let client: VaultAgentClient
    private let directory: String
    private let fallback: @Sendable () async throws -> any SecretStorage
    private let direct = Mutex<(any SecretStorage)?>(nil)

    init(client: VaultAgentClient, directory: String, fallback: @escaping @Sendable () async throws -> any SecretStorage) {
        self.client = client
        self.directory = directory
        self.fallback = fallback
    }

    var storageKind: StorageKind { .file }
    var storageGeneration: UInt64 { direct.withLock { $0?.storageGeneration } ?? 0 }

    /// Runs `request` at the agent, or `directly` once the agent turned out not to hold the vault.
    private func route<T>(_ request: () throws -> T, directly: (any SecretStorage) async throws -> T) async throws -> T {
        if let storage = direct.withLock({ $0 }) { return try await directly(storage) }
        do {
            return try request()
        } catch let error as VaultError where error.code == .vaultLocked || error.code == .agentUnavailable {
            if error.code == .agentUnavailable {
                ErrorReport.note("vault: warning: \(error.message); opening the vault directly")
            }
            let storage = try await fallback()
            direct.withLock { $0 = storage }
            return try await directly(storage)
        }
    }

    func listEntries(owner: String?) async throws -> [EntryMetadata] {
        try await route({ try client.list(directory: directory, owner: owner) }, directly: { try await $0.listEntries(owner: owner) })
    }

    // The CLI's own reads and writes of the session's entries (the OAuth client, its secret and DPoP
    // key) are the session's: marked so (the entry commands refuse these names before they get here).
    func readEntry(named name: String, owner: String) async throws -> VaultEntry {
        try await route({ try client(for: [(name, owner)]).entry(named: name, owner: owner, directory: directory) },
                        directly: { try await $0.readEntry(named: name, owner: owner) })
    }

    func storeEntries(_ entries: [NewEntry], replace: Bool) async throws -> [EntryMetadata] {
        try await route({ try client(for: entries.map { ($0.name, $0.owner) }).store(entries, replace: replace, directory: directory) },
                        directly: { try await $0.storeEntries(entries, replace: replace) })
    }

    func removeEntry(named name: String, owner: String) async throws {
        try await route({ try client(for: [(name, owner)]).remove(named: name, owner: owner, directory: directory) },
                        directly: { try await $0.removeEntry(named: name, owner: owner) })
    }

    /// The client, marked as the session's when `entries` are the session's.
    private func client(for entries: [(name: String, owner: String)]) -> VaultAgentClient {
        entries.contains { ReservedEntryNames.isReserved(name: $0.name, owner: $0.owner) } ? client.forSession() : client
    }

    func verifyAll() async throws -> VerificationReport {
        if let storage = direct.withLock({ $0 }) { return try await storage.verifyAll() }
        return try await fallback().verifyAll()
    }

    func closeStorage() async {
        await direct.withLock({ $0 })?.closeStorage()
    }
}
