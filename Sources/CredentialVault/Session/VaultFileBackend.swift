import FoundationEssentials
import Synchronization
import VaultCrypto

/// A session over the vault file, which this process opens itself (`SessionManager(directory:key:)`,
/// `SessionManager(store:)`): everything a session has. The vault is opened on first use and
/// kept; without a key, an existing vault is locked and guests without a vault still work.
final class VaultFileBackend: DeviceSessionBackend {
    let directory: String
    private let key: VaultKey?
    private let options: SecretStore.Options
    /// The vault once opened. Only the session's actor calls in; the lock makes that safe to state.
    private let opened: Mutex<SecretStore?>

    /// - Parameters:
    ///   - directory: The vault's directory.
    ///   - key: The vault key, or nil (locked).
    ///   - store: The vault, when already open.
    ///   - options: How to open or create it.
    init(directory: String, key: VaultKey?, store: SecretStore?, options: SecretStore.Options) {
        self.directory = directory
        self.key = key
        self.options = options
        self.opened = Mutex(store)
    }

    func prepare() async throws {
        _ = try await vaultOffPool(create: false)
    }

    func checkReadable() throws {
        // As restore(): an existing vault without a key is locked, whoever is signed in.
        if key == nil, opened.withLock({ $0 == nil }), SecretStore.exists(in: directory) {
            throw SessionUnavailable(reason: .locked, error: nil)
        }
    }

    func records(named names: [String], owner: String) throws -> [VaultEntry] {
        guard let vault = try vault(create: false) else { return [] }
        return try vault.snapshot { view in
            try names.compactMap { name in
                guard let metadata = view.metadata(named: name, owner: owner) else { return nil }
                return VaultEntry(metadata: metadata, secret: try view.secret(named: name, owner: owner))
            }
        }
    }

    func replace(_ entries: [NewEntry]) throws {
        guard let vault = try vault(create: false) else { throw SessionUnavailable(reason: .locked, error: nil) }
        try vault.update { transaction in
            for entry in entries { try transaction.put(entry, replace: true) }
        }
    }

    func remove(names: [String], owner: String) throws {
        guard let vault = try vault(create: false) else { return }
        try vault.update { transaction in
            for name in names where transaction.metadata(named: name, owner: owner) != nil {
                try transaction.remove(named: name, owner: owner)
            }
        }
    }

    func endSession(owner: String?, localData: LocalDataPolicy, replacedGuest: String?) throws -> Credentials? {
        guard let vault = try vault(create: false) else { return nil }
        return try vault.update { transaction -> Credentials? in
            var credentials: Credentials?
            if let owner {
                credentials = (try? CredentialRecords.read(owner: owner, from: transaction)) ?? nil
                SessionManager.removeUserEntries(owner: owner, localData: localData, in: &transaction)
            }
            // The replaced guest's items go with it: nothing is left under an id no one uses.
            if let replacedGuest { transaction.removeAll(owner: replacedGuest) }
            transaction.rotateDataKey()
            return credentials
        }
    }

    func sessionOwners() async throws -> [String] {
        guard let vault = try await vaultOffPool(create: false) else { return [] }
        return try vault.snapshot { SessionManager.sessionOwners(in: $0.list()) }
    }

    func vault(create: Bool) throws -> SecretStore? {
        if let vault = opened.withLock({ $0 }) { return vault }
        guard let key else {
            if SecretStore.exists(in: directory) || create { throw SessionUnavailable(reason: .locked, error: nil) }
            return nil
        }
        let vault: SecretStore
        if SecretStore.exists(in: directory) {
            vault = try SecretStore.open(in: directory, key: key, options: options)
        } else if create {
            vault = try SecretStore.create(in: directory, key: key, options: options)
        } else {
            return nil
        }
        return keep(vault)
    }

    func vaultOffPool(create: Bool) async throws -> SecretStore? {
        if let vault = opened.withLock({ $0 }) { return vault }
        guard let key else { return try vault(create: create) }
        let (directory, options) = (directory, options)
        let vault = try await BlockingWork.run { () throws -> SecretStore? in
            if SecretStore.exists(in: directory) { return try SecretStore.open(in: directory, key: key, options: options) }
            return create ? try SecretStore.create(in: directory, key: key, options: options) : nil
        }
        return vault.map(keep)
    }

    func housekeepingVault() async throws -> SecretStore? {
        try await vaultOffPool(create: false)
    }

    func forgetVault() {
        opened.withLock { $0 = nil }
    }

    /// Keeps the first vault opened (another call may have opened it meanwhile) and returns it.
    private func keep(_ vault: SecretStore) -> SecretStore {
        opened.withLock { current in
            if let current { return current }
            current = vault
            return vault
        }
    }
}
