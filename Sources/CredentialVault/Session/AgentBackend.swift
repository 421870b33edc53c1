import VaultCrypto

/// A vault file's session read and written through the user's `vault agent`, which holds the vault
/// unlocked: the key stays in the agent, and the agent never calls a server. The process that asks
/// reads the tokens, calls the server itself and hands the new pair to the agent, which saves it
/// in one write. The single-flight lock of a refresh is the same `session.lock` in the vault's
/// directory that every process takes, with or without the agent, so one refresh runs across all
/// of them (docs/SESSIONS.md, "Fresh credentials").
///
/// Such a session reads its state, refreshes, and ends a session that can no longer be renewed.
/// What needs the whole vault (sign-in, items, guest mode, profile recovery) reports the vault
/// locked (`SessionUnavailable`, reason `.locked`), as a vault without its key does, before it
/// changes anything: a refused guest mode leaves the user signed in.
struct AgentBackend: DeviceSessionBackend {
    /// The vault's directory as the session was given it.
    let directory: String
    /// The agent, marking its requests as the session's (`VaultAgentClient.forSession()`).
    let client: VaultAgentClient
    /// The vault's directory as the agent names it.
    let agentDirectory: String

    /// - Throws: `.notFound` when the directory does not exist.
    init(directory: String, agent: VaultAgentClient) throws {
        self.directory = directory
        self.client = agent.forSession()
        self.agentDirectory = try VaultAgentClient.canonical(directory)
    }

    func prepare() async throws {}

    func checkReadable() throws {}

    func records(named names: [String], owner: String) throws -> [VaultEntry] {
        try client.entries(named: names, owner: owner, directory: agentDirectory)
    }

    func replace(_ entries: [NewEntry]) throws {
        _ = try client.store(entries, replace: true, directory: agentDirectory)
    }

    func remove(names: [String], owner: String) throws {
        try client.remove(names: names, owner: owner, rotatingDataKey: false, directory: agentDirectory)
    }

    /// Through the agent, the user's entries and the replaced guest's go in a write each, both with a new data key.
    func endSession(owner: String?, localData: LocalDataPolicy, replacedGuest: String?) throws -> Credentials? {
        /// Removes the entries of `owner` that `removing` selects, in one write with a new data key.
        func remove(owner: String, _ removing: (String) -> Bool = { _ in true }) throws {
            let names = try client.list(directory: agentDirectory, owner: owner).map(\.name).filter(removing)
            if !names.isEmpty { try client.remove(names: names, owner: owner, rotatingDataKey: true, directory: agentDirectory) }
        }
        var removed: Credentials?
        if let owner {
            removed = try credentials(owner: owner)
            try remove(owner: owner) { localData != .keep || $0.hasPrefix(SessionNamespaces.Reserved.prefix) }
        }
        if let replacedGuest { try remove(owner: replacedGuest) }
        return removed
    }

    func sessionOwners() async throws -> [String] {
        SessionManager.sessionOwners(in: try client.list(directory: agentDirectory))
    }

    /// The agent holds the vault: this process does not open it, so it is locked here.
    func vault(create: Bool) throws -> SecretStore? {
        if SecretStore.exists(in: directory) || create { throw SessionUnavailable(reason: .locked, error: nil) }
        return nil
    }

    func vaultOffPool(create: Bool) async throws -> SecretStore? {
        try vault(create: create)
    }

    /// None: pending revocations and what a crashed sign-out left stay until a process that
    /// opens the vault itself starts the session.
    func housekeepingVault() async throws -> SecretStore? { nil }

    func forgetVault() {}
}
