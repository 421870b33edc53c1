import CredentialVault
import Synchronization

/// Everything one run of a command shares: what this executable links (the OAuth client, the
/// PostgreSQL store), the passphrases taken out of the environment at start-up, and, resolved on
/// first use and then kept, the key, the opened store and the session.
///
/// The entry pipeline (`VaultEntryPoint`) builds one per process and every command runs with it
/// (`ContextCommand.run(_:)`). It is the only reader of `KeySources.current` and the only place
/// that opens or creates a store for a command: so a command that reads the session, refreshes
/// its token and reads the OAuth client's secret derives the key once and asks for a passphrase
/// at most once, and every open honours the command's options (`--lock-timeout`,
/// `--accept-rollback`). `keygen`, `wipe`, `self-check`, help and a `status` with no vault never
/// touch it, so they never ask for a key.
package final class CommandContext: Sendable {
    /// The OAuth client's support, in the executables that link it (`vault-oauth`, `vault-postgres`).
    let oauth: (any OAuthCommandSupport)?
    /// The PostgreSQL store's support, in `vault-postgres`.
    let postgres: (any PostgresCommandSupport)?
    /// `VAULT_PASSPHRASE` and `VAULT_NEW_PASSPHRASE` as the process found them.
    let passphrases: CapturedPassphrases

    private let memo = Mutex(Memo())

    /// What was resolved so far.
    private struct Memo: Sendable {
        var key: VaultKey?
        /// The vault file, opened or created, with the directory it is in.
        var store: (directory: String, store: SecretStore)?
        /// The PostgreSQL stores opened or created (migrate-store may have two), with their URL and name.
        var postgresStores: [(url: String, name: String, store: any FleetSessionStore)] = []
        var session: SessionManager?
    }

    init(oauth: (any OAuthCommandSupport)?, postgres: (any PostgresCommandSupport)?, passphrases: CapturedPassphrases) {
        self.oauth = oauth
        self.postgres = postgres
        self.passphrases = passphrases
    }

    // MARK: The key

    /// The vault key, found once per process (`KeySources`): later calls return the same key
    /// without asking or reading again.
    /// - Parameter confirmNew: a typed passphrase is asked twice (the vault is being created).
    func key(_ options: VaultOptions, confirmNew: Bool = false) throws -> VaultKey {
        if let key = memo.withLock({ $0.key }) { return key }
        let key = try KeySources.current(options, passphrases: passphrases, confirmNew: confirmNew)
        memo.withLock { $0.key = key }
        return key
    }

    /// The new key for `vault passwd` (never memoised: it is asked for once, by that command).
    func newKey(_ options: VaultOptions, keyFile: String?, passphraseFile: String?) throws -> VaultKey {
        try KeySources.new(keyFile: keyFile, passphraseFile: passphraseFile, options: options, passphrases: passphrases)
    }

    /// Whether the key can be found at all without failing: for commands that report a locked
    /// vault instead of failing (`status`). A typed passphrase is still asked for.
    func keyIfAvailable(_ options: VaultOptions) -> VaultKey? {
        try? key(options)
    }

    // MARK: The vault file

    /// The vault file in `options.directory`, opened once.
    /// - Parameter allowWeakPassphrase: let `changeKey` accept a weak new passphrase (`vault passwd`).
    /// - Throws: `.notFound` before any passphrase is asked for when there is no vault; the errors of `SecretStore.open`.
    func openStore(_ options: VaultOptions, allowWeakPassphrase: Bool = false) throws -> SecretStore {
        try options.requireFileStore()
        return try openVaultFile(options, allowWeakPassphrase: allowWeakPassphrase)
    }

    /// `openStore` whatever store the options select (`migrate-store`'s vault file beside a PostgreSQL store).
    func openVaultFile(_ options: VaultOptions, allowWeakPassphrase: Bool = false) throws -> SecretStore {
        let directory = options.directory
        if let opened = memo.withLock({ $0.store }), opened.directory == directory { return opened.store }
        guard SecretStore.exists(in: directory) else { throw VaultError.vaultNotFound(path: directory) }
        var storeOptions = options.storeOptions
        storeOptions.allowsWeakPassphrase = allowWeakPassphrase
        let store = try SecretStore.open(in: directory, key: try key(options), options: storeOptions)
        memo.withLock { $0.store = (directory, store) }
        return store
    }

    /// Creates the vault file; a passphrase typed on the terminal is asked for twice.
    /// - Throws: `.alreadyExists` before any passphrase is asked for; the errors of `SecretStore.create`.
    func createStore(_ options: VaultOptions, allowWeakPassphrase: Bool = false) throws -> SecretStore {
        try options.requireFileStore()
        return try createVaultFile(options, allowWeakPassphrase: allowWeakPassphrase)
    }

    /// `createStore` whatever store the options select (`migrate-store`'s destination).
    func createVaultFile(_ options: VaultOptions, allowWeakPassphrase: Bool = false) throws -> SecretStore {
        let directory = options.directory
        if SecretStore.exists(in: directory) {
            throw VaultError(.alreadyExists, "a vault already exists here", path: directory,
                             fix: "use it, choose another --vault DIR, or destroy it with 'vault wipe'")
        }
        var storeOptions = options.storeOptions
        storeOptions.allowsWeakPassphrase = allowWeakPassphrase
        let store = try SecretStore.create(in: directory, key: try key(options, confirmNew: true), options: storeOptions)
        memo.withLock { $0.store = (directory, store) }
        return store
    }

    /// The vault file, opened, or created when there is none yet.
    func openOrCreateStore(_ options: VaultOptions) throws -> SecretStore {
        SecretStore.exists(in: options.directory) ? try openStore(options) : try createStore(options)
    }

    // MARK: The selected store (the vault file or PostgreSQL)

    /// The selected store, opened once: the vault file, or a PostgreSQL store (`vault-postgres`).
    func openStorage(_ options: VaultOptions) async throws -> any SecretStorage {
        guard let selected = try options.storeSelection.postgres else { return try openStore(options) }
        return try await openPostgres(options, url: selected.url, name: selected.storeName)
    }

    /// The store for the entry commands (`get`, `list`, `inspect`, `add`, `rm`, `exec`, `inject`,
    /// `import`, the git and docker helpers): through the user's `vault agent` when one answers and
    /// holds this vault unlocked, else `openStorage`.
    ///
    /// The agent comes after `--key-file` and `--passphrase-file` in the key order and before
    /// `$VAULT_KEY_FILE`, `$VAULT_PASSPHRASE` and the prompt; `--no-agent` skips it, and so does a
    /// PostgreSQL store. With no agent configured (`VAULT_AGENT_SOCK`, `XDG_RUNTIME_DIR`) or no socket
    /// there, nothing is tried; with an agent that does not hold the vault, one request is.
    func openEntryStorage(_ options: VaultOptions) async throws -> any SecretStorage {
        guard let (client, directory) = try agent(for: options) else { return try await openStorage(options) }
        return AgentStorage(client: client, directory: directory) { [self] in
            try await self.openStorage(options)
        }
    }

    /// The user's agent and the vault's directory as the agent names it, when the entry commands
    /// should ask it (see `openEntryStorage`); nil when they open the vault themselves.
    func agent(for options: VaultOptions) throws -> (client: VaultAgentClient, directory: String)? {
        guard !options.noAgent, options.keyFile == nil, options.passphraseFile == nil, memo.withLock({ $0.store == nil }),
              try options.storeSelection.postgres == nil, let client = VaultAgentClient.forCurrentUser(),
              SecretStore.exists(in: options.directory) else { return nil }
        return (client, try VaultAgentClient.canonical(options.directory))
    }

    /// One entry operation of the git and docker helpers: `throughAgent` at the user's agent when it
    /// holds the vault (see `agent(for:)`), else `directly` on the vault opened here. An agent that
    /// does not hold the vault, or does not answer, sends the operation to the direct path.
    func entryOperation<T>(_ options: VaultOptions, throughAgent: (VaultAgentClient, String) throws -> T,
                           directly: (SecretStore) throws -> T) throws -> T {
        if let (client, directory) = try agent(for: options) {
            do {
                return try throughAgent(client, directory)
            } catch let error as VaultError where error.code == .vaultLocked || error.code == .agentUnavailable {
                // Not held by the agent (or it died): the vault is opened directly below.
            }
        }
        return try directly(try openStore(options))
    }

    /// Creates a vault in the selected store; a passphrase typed on the terminal is asked for twice.
    func createStorage(_ options: VaultOptions, allowWeakPassphrase: Bool = false) async throws -> any SecretStorage {
        guard let selected = try options.storeSelection.postgres else {
            return try createStore(options, allowWeakPassphrase: allowWeakPassphrase)
        }
        return try await createPostgres(options, url: selected.url, name: selected.storeName)
    }

    /// The PostgreSQL store the options select, for the fleet-session commands.
    /// - Throws: `.invalidInput` for the vault file.
    func openFleetSessions(_ options: VaultOptions) async throws -> any FleetSessionStore {
        guard let selected = try options.storeSelection.postgres else {
            throw VaultError(.invalidInput, "fleet sessions live in a PostgreSQL store", fix: "give --store postgres://…")
        }
        return try await openPostgres(options, url: selected.url, name: selected.storeName)
    }

    /// The PostgreSQL store `name` at `url`, opened once with this process's key (`close()` closes it).
    func openPostgres(_ options: VaultOptions, url: String, name: String) async throws -> any FleetSessionStore {
        if let opened = memo.withLock({ $0.postgresStores.first { $0.url == url && $0.name == name } }) { return opened.store }
        let store = try await requirePostgres().open(url: url, storeName: name, key: try key(options), timeout: options.operationTimeout,
                                                     acceptRollback: options.acceptRollback)
        memo.withLock { $0.postgresStores.append((url, name, store)) }
        return store
    }

    /// Creates the PostgreSQL store `name` at `url`; a passphrase typed on the terminal is asked for twice.
    func createPostgres(_ options: VaultOptions, url: String, name: String) async throws -> any FleetSessionStore {
        let store = try await requirePostgres().create(url: url, storeName: name, key: try key(options, confirmNew: true),
                                                       timeout: options.operationTimeout)
        memo.withLock { $0.postgresStores.append((url, name, store)) }
        return store
    }

    /// Closes what was opened (PostgreSQL stores' connections) and forgets the key, the store and
    /// the session (their key material is zeroised as they are released). The entry pipeline calls
    /// it once the command has run, whatever happened; `exec` calls it before it waits for its child.
    func close() async {
        let stores = memo.withLock { memo -> [any FleetSessionStore] in
            defer { memo = Memo() }
            return memo.postgresStores.map(\.store)
        }
        for store in stores { await store.closeStorage() }
    }

    // MARK: The session

    /// When the session needs the key.
    enum SessionKey {
        /// Always: the command writes the session (signin); a typed passphrase for a new vault is asked twice.
        case required
        /// When a vault exists (guest, signout, token); none when there is no vault yet.
        case whenVaultExists
        /// When one can be found; a vault without one is reported locked (status).
        case ifAvailable
    }

    /// The session, built once: over the vault directory (over the store this context opened, so
    /// the key is derived once for both), or, on a PostgreSQL store, the fleet session `fleetSession`.
    /// - Parameters:
    ///   - fleetSession: `--session NAME`: required on a PostgreSQL store, refused on the vault file.
    ///   - key: when the key is needed (the vault file's session).
    ///   - leeway: how early an access token counts as expired (the library's default when nil).
    ///   - throughAgent: whether the vault file's session may go through the user's agent when it
    ///     holds the vault unlocked (`vault token`: reading and refreshing; see `agentSession`).
    func session(_ options: VaultOptions, fleetSession: String? = nil, key requirement: SessionKey,
                 leeway: Duration? = nil, throughAgent: Bool = false) async throws -> SessionManager {
        if let session = memo.withLock({ $0.session }) { return session }
        var configuration = SessionConfiguration(lockTimeout: options.lockTimeout)
        if let leeway { configuration.leeway = leeway }
        configuration.acceptRollback = options.acceptRollback
        configuration.acceptsRaisedKDFCost = options.acceptKDFCost
        let session: SessionManager
        if try selectsFileSession(options, fleetSession: fleetSession) {
            session = try (throughAgent ? agentSession(options, configuration: configuration) : nil)
                ?? fileSession(options, key: requirement, configuration: configuration)
        } else {
            session = SessionManager(fleet: try await openFleetSessions(options), session: fleetSession ?? "", configuration: configuration)
        }
        memo.withLock { $0.session = session }
        return session
    }

    /// True when the options select the vault file's session, false for a fleet session; checks
    /// `--session` against the store first: required on PostgreSQL, refused on the vault file (64).
    func selectsFileSession(_ options: VaultOptions, fleetSession: String?) throws -> Bool {
        guard case .postgres = try options.storeSelection else {
            if fleetSession != nil { throw UsageError("--session names a fleet session in a PostgreSQL store; give --store postgres://… too") }
            return true
        }
        guard let fleetSession, !fleetSession.isEmpty else {
            throw UsageError("on a PostgreSQL store, name the fleet session with --session NAME")
        }
        try EntryValidation.checkOwner(fleetSession)
        return false
    }

    /// The vault file's session through the user's agent, when one answers and holds the vault
    /// unlocked (in the key order, as `openEntryStorage`); nil otherwise. An agent that does not
    /// answer is reported as a warning, and the vault is opened directly.
    private func agentSession(_ options: VaultOptions, configuration: SessionConfiguration) throws -> SessionManager? {
        guard let (client, directory) = try agent(for: options) else { return nil }
        do {
            guard try client.status().vaults.contains(where: { $0.directory == directory }) else { return nil }
        } catch let error as VaultError where error.code == .agentUnavailable {
            ErrorReport.note("vault: warning: \(error.message); opening the vault directly")
            return nil
        }
        return try SessionManager(directory: options.directory, agent: client, configuration: configuration)
    }

    /// The vault file's session.
    private func fileSession(_ options: VaultOptions, key requirement: SessionKey, configuration: SessionConfiguration) throws -> SessionManager {
        guard SecretStore.exists(in: options.directory) else {
            let key = requirement == .required ? try self.key(options, confirmNew: true) : nil
            return SessionManager(directory: options.directory, key: key, configuration: configuration)
        }
        switch requirement {
        case .required, .whenVaultExists:
            return SessionManager(store: try openStore(options), configuration: configuration)
        case .ifAvailable:
            // Not opened here: the session opens the vault only if the profile names a user
            // (`status` of a guest reads no vault), and reports a locked or unreadable one as
            // `unavailable`. Nothing else in such a command opens the store.
            return SessionManager(directory: options.directory, key: keyIfAvailable(options), configuration: configuration)
        }
    }

    /// The stored OAuth client configuration, sealed in the store (the vault file, read through the
    /// agent when it holds it; or PostgreSQL, shared by the fleet).
    /// - Throws: `.tampered` when the profile holds a copy that is not sealed or differs from the sealed one.
    func storedClient(_ options: VaultOptions) async throws -> StoredClientConfiguration? {
        guard case .postgres = try options.storeSelection else {
            let copy = try StoredClientConfiguration.profileCopy(options)
            let sealed = SecretStore.exists(in: options.directory)
                ? try await StoredClientConfiguration.load(from: try await openEntryStorage(options)) : nil
            return try StoredClientConfiguration.checked(sealed: sealed, profileCopy: copy)
        }
        return try await StoredClientConfiguration.load(from: try await openFleetSessions(options))
    }

    /// `storedClient`, or the reason it cannot be used (a forged profile copy), for a command that
    /// reads it first and decides later whether the reason matters (sign-out wipes whatever it says).
    func storedClientResult(_ options: VaultOptions) async -> Result<StoredClientConfiguration?, VaultError> {
        do {
            return .success(try await storedClient(options))
        } catch let error as VaultError {
            return .failure(error)
        } catch {
            return .failure(VaultError(.io, "the OAuth client configuration could not be read"))
        }
    }

    /// A client for `stored`, with its secret (when its method sends one) read through the
    /// store this context opened: no second key derivation.
    /// - Parameter server: the command's `--request-timeout`.
    func oauthClient(for stored: StoredClientConfiguration, _ options: VaultOptions, _ server: ServerOptions) async throws -> any CommandOAuthClient {
        let oauth = try requireOAuth()
        let bundle = try stored.verifiedCABundle()
        let timeout = server.requestTimeout
        let dpopKey = stored.dpop ? try await dpopKey(options) : nil
        guard stored.authMethod.sendsSecret else {
            return try oauth.client(for: stored, secret: nil, requestTimeout: timeout, caBundle: bundle, dpopKey: dpopKey)
        }
        guard case .postgres = try options.storeSelection else {
            return try oauth.client(for: stored, secret: try await clientSecret(options), requestTimeout: timeout, caBundle: bundle,
                                    dpopKey: dpopKey)
        }
        let secret = try await openFleetSessions(options).readEntry(named: StoredClientConfiguration.secretEntry, owner: "").secret
        return try oauth.client(for: stored, secret: secret, requestTimeout: timeout, caBundle: bundle, dpopKey: dpopKey)
    }

    /// The stored client's DPoP key (`--dpop`), read like its secret.
    func dpopKey(_ options: VaultOptions) async throws -> SecureBytes {
        if case .postgres = try options.storeSelection {
            return try await openFleetSessions(options).readEntry(named: StoredClientConfiguration.dpopKeyEntry, owner: "").secret
        }
        return try await openEntryStorage(options).readEntry(named: StoredClientConfiguration.dpopKeyEntry, owner: "").secret
    }

    /// The OAuth client's secret kept in the vault file, read through the store this context opened
    /// (or, when it opened none, through the agent that holds the vault).
    func clientSecret(_ options: VaultOptions) async throws -> SecureBytes {
        try await openEntryStorage(options).readEntry(named: StoredClientConfiguration.secretEntry, owner: "").secret
    }

    // MARK: What this executable links

    /// The OAuth client's support, or an error naming the missing helper (exit 66).
    func requireOAuth() throws -> any OAuthCommandSupport {
        if let oauth { return oauth }
        throw HelperExecutable.oauth.missing()
    }

    /// The PostgreSQL store's support, or an error naming the missing helper (exit 66).
    func requirePostgres() throws -> any PostgresCommandSupport {
        if let postgres { return postgres }
        throw HelperExecutable.postgres.missing()
    }
}
