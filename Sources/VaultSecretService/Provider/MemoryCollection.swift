import CredentialVault

/// A collection held only in the agent's memory: the `session` collection, and the ones
/// CreateCollection makes. Its items and secrets never touch disk and are gone when the agent
/// stops. It is never locked. Bus-thread only.
final class MemoryCollection {
    /// Its path element.
    let id: String
    /// Its label.
    var label: String
    /// When it was made and last changed, in seconds since 1970.
    let created: UInt64
    var modified: UInt64
    /// The items, by path element.
    private(set) var items: [String: (record: SecretItemRecord, secret: SecureBytes)] = [:]

    /// The most items one in-memory collection holds.
    static let maximumItems = 10_000

    init(id: String, label: String) {
        self.id = id
        self.label = label
        created = SecretItemRecord.now
        modified = created
    }

    /// Stores a new item, or replaces the item `name`.
    func put(_ record: SecretItemRecord, secret: SecureBytes) throws {
        guard items[record.name] != nil || items.count < Self.maximumItems else {
            throw BusError.failed("the collection \(id) holds the maximum of \(Self.maximumItems) items")
        }
        items[record.name] = (record, secret)
        modified = SecretItemRecord.now
    }

    /// Removes the item `name`; false when there was none.
    @discardableResult
    func remove(_ name: String) -> Bool {
        guard items.removeValue(forKey: name) != nil else { return false }
        modified = SecretItemRecord.now
        return true
    }
}
