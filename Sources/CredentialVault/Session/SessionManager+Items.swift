import FoundationEssentials
import VaultCrypto

extension SessionManager {
    /// Stores an item for whoever is using the app: the guest or the signed-in user.
    /// - Throws: store errors; `.invalidInput` for reserved names (`session.`).
    public func saveItem(_ entry: NewEntry, replace: Bool = true) async throws {
        try Self.checkItemName(entry.name)
        var entry = entry
        entry.owner = try await ownerNoticingChanges()
        guard let vault = try await device.vaultOffPool(create: true) else { throw SessionUnavailable(reason: .locked, error: nil) }
        try vault.put(entry, replace: replace)
    }

    /// Stores text as an item (Valet's `set(string:forKey:)`); the text is copied into a
    /// zeroising buffer. Prefer `saveItem(_:)` with `SecureBytes` where the secret never
    /// needs to be a `String`.
    /// - Parameters:
    ///   - string: The secret text, stored as UTF-8.
    ///   - name: The item's name.
    public func saveItem(string: String, named name: String) async throws {
        try await saveItem(NewEntry(name: name, secret: SecureBytes(copying: Array(string.utf8))))
    }

    /// An item's secret as text (Valet's `string(forKey:)`), or nil when there is no such item.
    /// - Throws: `.invalidInput` when the item is not valid UTF-8; store errors.
    public func itemString(named name: String) async throws -> String? {
        do {
            let bytes = try await item(named: name)
            return try bytes.withUnsafeBytes { buffer in
                guard let text = String(validating: buffer, as: UTF8.self) else {
                    throw VaultError(.invalidInput, "the item '\(name)' is not UTF-8 text")
                }
                return text
            }
        } catch let error as VaultError where error.code == .notFound {
            return nil
        }
    }

    /// The items of whoever is using the app (without the session's own entries).
    public func items() async throws -> [EntryMetadata] {
        let owner = try await ownerNoticingChanges()
        guard let vault = try await device.vaultOffPool(create: false) else { return [] }
        return try vault.list(owner: owner).filter { !$0.name.hasPrefix(SessionNamespaces.Reserved.prefix) }
    }

    /// One item's secret for whoever is using the app.
    /// - Throws: `.notFound`; store errors.
    public func item(named name: String) async throws -> SecureBytes {
        let owner = try await ownerNoticingChanges()
        guard let vault = try await device.vaultOffPool(create: false) else { throw VaultError.entryNotFound(name) }
        return try vault.secret(named: name, owner: owner)
    }

    /// Removes one item of whoever is using the app.
    /// - Throws: `.notFound`; `.invalidInput` for reserved names; store errors.
    public func removeItem(named name: String) async throws {
        try Self.checkItemName(name)
        let owner = try await ownerNoticingChanges()
        guard let vault = try await device.vaultOffPool(create: false) else { throw VaultError.entryNotFound(name) }
        try vault.update { transaction in try transaction.remove(named: name, owner: owner) }
    }

    /// The guest's items, also while someone is signed in: what stayed with the guest at
    /// sign-in (non-transferable items, conflicts the account won).
    public func guestItems() async throws -> [EntryMetadata] {
        let device = try backend.device(for: .guestItems)
        guard let anonymous = try profiles.load()?.anonymousID ?? anonymousID,
              let vault = try await device.vaultOffPool(create: false) else { return [] }
        return try vault.list(owner: SessionNamespaces.guest(anonymous))
    }

    /// One of the guest's items, also while someone is signed in.
    /// - Throws: `.notFound`; store errors.
    public func guestItem(named name: String) async throws -> SecureBytes {
        let device = try backend.device(for: .guestItems)
        guard let anonymous = try profiles.load()?.anonymousID ?? anonymousID,
              let vault = try await device.vaultOffPool(create: false) else { throw VaultError.entryNotFound(name) }
        return try vault.secret(named: name, owner: SessionNamespaces.guest(anonymous))
    }

    static func checkItemName(_ name: String) throws {
        guard !name.hasPrefix(SessionNamespaces.Reserved.prefix) else {
            throw VaultError(.invalidInput, "names starting with 'session.' are reserved")
        }
    }

    /// The current owner, publishing a change another process made to who that is.
    private func ownerNoticingChanges() async throws -> String {
        try requireDeviceSession(.items)
        if let profile = try profiles.load() { await noticeExternalChange(profile) }
        return try currentOwner()
    }
}
