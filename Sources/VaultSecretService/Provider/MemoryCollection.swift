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

    /// The bytes its items hold (labels, attributes, secrets, names), for the provider's budget.
    private(set) var byteCount = 0

    /// What one item counts against the budget.
    static func byteCount(_ record: SecretItemRecord, _ secret: SecureBytes) -> Int {
        record.name.utf8.count + record.label.utf8.count + record.contentType.utf8.count + secret.count
            + record.attributes.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count }
    }

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
        if let old = items[record.name] { byteCount -= Self.byteCount(old.record, old.secret) }
        items[record.name] = (record, secret)
        byteCount += Self.byteCount(record, secret)
        modified = SecretItemRecord.now
    }

    /// Removes the item `name`; false when there was none.
    @discardableResult
    func remove(_ name: String) -> Bool {
        guard let old = items.removeValue(forKey: name) else { return false }
        byteCount -= Self.byteCount(old.record, old.secret)
        modified = SecretItemRecord.now
        return true
    }
}
