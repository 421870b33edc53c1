import FoundationEssentials
import VaultCrypto

/// The storage seam: where sealed entries are kept.
///
/// Two implementations, chosen when a store is opened: the vault file (`SecretStore`, the default,
/// in this module) and PostgreSQL (`PostgresSecretStore`, in `CredentialVaultPostgres`, a product of
/// its own). Both seal every entry on the client with the same key hierarchy, refuse tampering and
/// rollback, and apply each write as one transaction that advances a vault-wide generation. Code
/// that works on entries (the CLI's entry commands, `vault migrate-store`) is written once against
/// this protocol. `package`: it is this package's seam, not an app's API; apps use the concrete stores.
package protocol SecretStorage: Sendable {
    /// What kind of storage this is, for messages (`file`, `postgres`).
    var storageKind: StorageKind { get }

    /// The highest generation seen (it increases by one with every write).
    var storageGeneration: UInt64 { get }

    /// Metadata of every entry, or of one owner's, ordered by (owner, name).
    func listEntries(owner: String?) async throws -> [EntryMetadata]

    /// One entry with its secret.
    /// - Throws: `.notFound`, `.tampered`, and the errors of opening.
    func readEntry(named name: String, owner: String) async throws -> VaultEntry

    /// Applies `entries` as one transaction: every one is added (or replaces an entry of the same
    /// owner and name when `replace`), or none is.
    /// - Returns: The stored metadata, in the order given.
    /// - Throws: `.alreadyExists` without `replace`, `.invalidInput`, and the errors of writing.
    func storeEntries(_ entries: [NewEntry], replace: Bool) async throws -> [EntryMetadata]

    /// As `storeEntries(_:replace:)`, naming who writes (kept in each entry's history where the
    /// storage keeps one: the vault file; the others ignore it).
    func storeEntries(_ entries: [NewEntry], replace: Bool, writer: EntryWriter) async throws -> [EntryMetadata]

    /// Removes one entry.
    /// - Throws: `.notFound` when it is not there.
    func removeEntry(named name: String, owner: String) async throws

    /// Authenticates every entry and the vault's bookkeeping.
    func verifyAll() async throws -> VerificationReport

    /// Releases connections or handles; the storage cannot be used afterwards.
    func closeStorage() async
}

/// Which implementation of `SecretStorage` a store is.
package enum StorageKind: String, Sendable {
    /// The vault file in a directory (`SecretStore`).
    case file
    /// Tables in a PostgreSQL database (`PostgresSecretStore`).
    case postgres
}

extension SecretStorage {
    /// Storage without history ignores the writer.
    package func storeEntries(_ entries: [NewEntry], replace: Bool, writer: EntryWriter) async throws -> [EntryMetadata] {
        try await storeEntries(entries, replace: replace)
    }

    /// Adds one entry, or replaces it when `replace` is true.
    /// - Returns: The stored metadata.
    package func storeEntry(_ entry: NewEntry, replace: Bool, writer: EntryWriter = .unspecified) async throws -> EntryMetadata {
        let stored = try await storeEntries([entry], replace: replace, writer: writer)
        guard let metadata = stored.first else { throw VaultError(.io, "the store reported no entry written") }
        return metadata
    }
}
