import VaultCrypto

/// A vault file's session read and written through the user's `vault agent`, which holds the vault
/// unlocked: the key stays in the agent, and the agent never calls a server. The process that asks
/// reads the tokens, calls the server itself and hands the new pair to the agent, which saves it
/// in one write. The single-flight lock of a refresh is the same `session.lock` in the vault's
/// directory that every process takes, with or without the agent, so one refresh runs across all
/// of them (docs/SESSIONS.md, "Fresh credentials").
///
/// Such a session reads its state, refreshes, and ends a session that can no longer be renewed.
/// What needs the vault itself (sign-in, items, settings, profile recovery) reports the vault
/// locked (`SessionUnavailable`, reason `.locked`).
extension SessionManager {
    /// The agent and the vault's directory as the agent names it.
    struct AgentBinding: Sendable {
        let client: VaultAgentClient
        let directory: String
    }

    /// Creates a session over `directory` whose vault `agent` holds unlocked.
    /// - Throws: `.notFound` when the directory does not exist.
    package init(directory: String, agent: VaultAgentClient, configuration: SessionConfiguration = SessionConfiguration()) throws {
        let binding = AgentBinding(client: agent.forSession(), directory: try VaultAgentClient.canonical(directory))
        self.init(directory: directory, key: nil, store: nil, fleet: nil, agent: binding, configuration: configuration)
    }

    // MARK: The vault's session records, wherever the vault is open

    /// Opens the vault (the key derivation, scrypt for a passphrase, off the cooperative pool)
    /// before the synchronous reads below, unless the agent holds it.
    func openVaultOffPool() async throws {
        if agent == nil { _ = try await openStoreOffPool(create: false) }
    }

    /// The credentials `owner` has stored, or nil (also when there is no vault).
    func readCredentials(owner: String) throws -> Credentials? {
        if let agent {
            return CredentialRecords.credentials(from: try agent.client.entries(named: CredentialRecords.recordNames, owner: owner,
                                                                                directory: agent.directory))
        }
        guard let store = try openStore(create: false) else { return nil }
        return try store.snapshot { try CredentialRecords.read(owner: owner, from: $0) }
    }

    /// The secret of the reserved entry `name` of `owner` (a journal's marker), or nil.
    func readMarker(_ name: String, owner: String) throws -> SecureBytes? {
        if let agent {
            return try agent.client.entries(named: [name], owner: owner, directory: agent.directory).first?.secret
        }
        guard let store = try openStore(create: false) else { return nil }
        return try store.snapshot { view in
            view.metadata(named: name, owner: owner) == nil ? nil : try view.secret(named: name, owner: owner)
        }
    }

    /// Saves refreshed credentials with the refresh journal's marker in one write. `credentials`
    /// keeps the refresh and id tokens it replaces (the caller merged them), so nothing is removed.
    /// `extra` entries (a per-audience token) land in the same write.
    func saveRefreshed(_ credentials: Credentials, owner: String, marker: SecureBytes, extra: [NewEntry] = []) throws {
        let markerEntry = NewEntry(name: SessionNamespaces.Reserved.refreshMarker, owner: owner, secret: marker, transferable: false)
        if let agent {
            _ = try agent.client.store(try CredentialRecords.entries(for: credentials, owner: owner) + [markerEntry] + extra, replace: true,
                                       directory: agent.directory)
            return
        }
        guard let store = try openStore(create: false) else { throw SessionUnavailable(reason: .locked, error: nil) }
        try store.update { transaction in
            try CredentialRecords.write(credentials, owner: owner, into: &transaction)
            try transaction.put(markerEntry, replace: true)
            for entry in extra { try transaction.put(entry, replace: true) }
        }
    }

    /// The vault's part of a sign-out through the agent (the profile has already forgotten the
    /// user): the user's credentials always, and items unless `localData` keeps them, go in one
    /// write with a new data key; a replaced guest's items go in another.
    /// - Returns: The credentials removed (for revocation), or nil.
    func endSessionThroughAgent(_ agent: AgentBinding, user: User?, localData: LocalDataPolicy, replacedGuest: String?) throws -> Credentials? {
        /// Removes the entries of `owner` that `removing` selects, in one write with a new data key.
        func remove(owner: String, _ removing: (String) -> Bool = { _ in true }) throws {
            let names = try agent.client.list(directory: agent.directory, owner: owner).map(\.name).filter(removing)
            if !names.isEmpty { try agent.client.remove(names: names, owner: owner, rotatingDataKey: true, directory: agent.directory) }
        }
        var removed: Credentials?
        if let user {
            let owner = SessionNamespaces.user(user.id)
            removed = try readCredentials(owner: owner)
            try remove(owner: owner) { localData != .keep || $0.hasPrefix(SessionNamespaces.Reserved.prefix) }
            logger.info("signed out", metadata: ["user": "\(user.id)"])
        }
        if let replacedGuest { try remove(owner: SessionNamespaces.guest(replacedGuest)) }
        return removed
    }
}
