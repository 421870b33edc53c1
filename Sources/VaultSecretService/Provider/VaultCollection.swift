import CredentialVault
import FoundationEssentials
import VaultCLI

/// The vault the agent serves, as the collection `login` (aliases `default` and `login`).
///
/// Its items are the vault's entries of owner `secret-service` (`owner`): entry name = the item's
/// path element, label = the item's label, attributes = the item's attributes, all sealed in the
/// vault file like every entry's metadata. Every read and write goes through the agent's handler
/// (`AgentRequestHandler.answer`), with the caller's rules, so the reserved names, the rollback
/// check and the rules apply as for socket callers, and the key never leaves the handler.
///
/// Locked is the handler not holding the vault. The last metadata index read while it was unlocked
/// stays in memory (names, labels, attributes, times; no value), so that a search on the locked
/// vault still finds its items — returned as locked, for the client to unlock through a prompt.
/// With no index read yet (the agent started locked), a search answers IsLocked. Bus-thread only.
final class VaultCollection {
    /// The owner of the vault entries that are Secret Service items.
    static let owner = SecretServiceEntries.owner
    /// Its path element.
    static let id = "login"

    /// The vault's directory.
    let directory: String
    private let handler: AgentRequestHandler
    /// Its label (in memory only: the vault has no place for a collection label).
    var label = "Login"
    /// When the provider started: the collection's Created.
    let created = SecretItemRecord.now
    /// The items last read, by entry name; nil until the vault was first read unlocked.
    private var index: [String: SecretItemRecord]?

    init(directory: String, handler: AgentRequestHandler) {
        self.directory = directory
        self.handler = handler
    }

    /// Whether the handler does not hold the vault unlocked.
    var isLocked: Bool {
        guard case let .status(status, _) = handler.answer(.status) else { return true }
        return !status.vaults.contains { $0.directory == directory }
    }

    /// When an item last changed (the collection's Modified): the newest item's, else Created.
    var modified: UInt64 {
        index?.values.map(\.modified).max() ?? created
    }

    /// The items, read from the vault's sealed index when it is unlocked, else the index last read.
    /// - Returns: the records and whether they come from the locked vault's remembered index.
    /// - Throws: `BusError` IsLocked when the vault is locked and was never read.
    func records() throws -> (records: [SecretItemRecord], locked: Bool) {
        switch handler.answer(.list(directory: directory, owner: Self.owner)) {
        case let .metadata(entries):
            let records = entries.filter { SecretPaths.isPathElement($0.name) }.map(SecretItemRecord.init(metadata:))
            index = Dictionary(records.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
            return (records, false)
        case let .refused(error) where error.code == .vaultLocked:
            guard let index else {
                throw BusError.isLocked("the vault \(directory) is locked and its items are not known yet: "
                                        + "unlock it (Unlock, or 'vault unlock' in a terminal)")
            }
            return (Array(index.values), true)
        case let .refused(error):
            throw error
        default:
            throw BusError.failed("the agent gave an unexpected answer")
        }
    }

    /// One item's record; nil when there is no such item.
    func record(_ name: String) throws -> SecretItemRecord? {
        try records().records.first { $0.name == name }
    }

    /// The item's secret.
    /// - Throws: `VaultError` as the handler answers (`.vaultLocked`, `.deniedByRule`, `.notFound`).
    func secret(_ name: String, access: ItemAccess) throws -> SecureBytes {
        switch handler.answer(.get(directory: directory, name: name, owner: Self.owner), policy: access) {
        case let .entry(entry): return entry.secret
        case let .refused(error): throw error
        default: throw BusError.failed("the agent gave an unexpected answer")
        }
    }

    /// Stores the item (a new entry, or a replacement of entry `record.name`).
    func put(_ record: SecretItemRecord, secret: SecureBytes, replace: Bool, access: ItemAccess) throws {
        let entry = NewEntry(name: record.name, owner: Self.owner, secret: secret, kind: .generic,
                             label: record.storedLabel, attributes: record.storedAttributes)
        switch handler.answer(.add(directory: directory, entries: [entry], replace: replace), policy: access) {
        case let .metadata(stored):
            for metadata in stored { index?[metadata.name] = SecretItemRecord(metadata: metadata) }
        case let .refused(error): throw error
        default: throw BusError.failed("the agent gave an unexpected answer")
        }
    }

    /// Removes the item.
    func remove(_ name: String, access: ItemAccess) throws {
        switch handler.answer(.remove(directory: directory, name: name, owner: Self.owner), policy: access) {
        case .done: index?[name] = nil
        case let .refused(error): throw error
        default: throw BusError.failed("the agent gave an unexpected answer")
        }
    }
}
