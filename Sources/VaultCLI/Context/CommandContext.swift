import CredentialVault
import Synchronization

/// Everything one run of a command shares: what this executable links (the OAuth client, the
/// PostgreSQL store), the environment read at start-up (the passphrases taken out of it, the
/// other variables `vault` reads), and, resolved on first use and then kept, the key, the opened
/// store and the session.
///
/// The entry pipeline (`VaultEntryPoint`) builds one per process and every command runs with it
/// (`ContextCommand.run(_:)`); a test can build one with an environment of its own. It decides
/// the key source (`keySource`), is the only reader of `KeySources.current`, and the only place
/// that opens or creates a store for a command (`storage(_:_:)` with a `StorageRequest`): so a
/// command that reads the session, refreshes its token and reads the OAuth client's secret derives
/// the key once and asks for a passphrase at most once, and every open honours the command's
/// options (`--lock-timeout`, `--accept-rollback`). `keygen`, `wipe`, `self-check`, help and a
/// `status` with no vault never ask it for a key.
package final class CommandContext: Sendable {
    /// The OAuth client's support, in the executables that link it (`vault-oauth`, `vault-postgres`).
    let oauth: (any OAuthCommandSupport)?
    /// The PostgreSQL store's support, in `vault-postgres`.
    let postgres: (any PostgresCommandSupport)?
    /// The Secret Service provider's support, in `vault-secret-service`.
    let secretService: (any SecretServiceCommandSupport)?
    /// `VAULT_PASSPHRASE` and `VAULT_NEW_PASSPHRASE` as the process found them.
    let passphrases: CapturedPassphrases
    /// The other environment variables the command reads, read once at start-up.
    let environment: CommandEnvironment

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

    init(oauth: (any OAuthCommandSupport)?, postgres: (any PostgresCommandSupport)?, secretService: (any SecretServiceCommandSupport)? = nil,
         passphrases: CapturedPassphrases, environment: CommandEnvironment) {
        self.oauth = oauth
        self.postgres = postgres
        self.secretService = secretService
        self.passphrases = passphrases
        self.environment = environment
    }

    // MARK: The key

    /// Where the key comes from (`KeySource`, the key order), from the options and the
    /// environment the process started with. Nothing is read or asked.
    func keySource(_ options: VaultOptions) -> KeySource {
        KeySource(keyFile: options.keyFile, passphraseFile: options.passphraseFile, environment: environment,
                  passphrase: passphrases.value("VAULT_PASSPHRASE"))
    }

    /// The vault key, found once per process (`keySource`, `KeySources`): later calls return the
    /// same key without asking or reading again.
    /// - Parameter confirmNew: a typed passphrase is asked twice (the vault is being created).
    func key(_ options: VaultOptions, confirmNew: Bool = false) throws -> VaultKey {
        if let key = memo.withLock({ $0.key }) { return key }
        let key = try KeySources.current(keySource(options), options: options, confirmNew: confirmNew)
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

    // MARK: The store

    /// The store the options name (`--store`, else `VAULT_STORE`; `StoreSelection`).
    /// - Throws: `.invalidInput` for a value that is neither `file` nor a `postgres://` URL.
    func storeSelection(_ options: VaultOptions) throws -> StoreSelection {
        try StoreSelection(store: options.store, storeName: options.storeName, environment: environment)
    }

    /// For commands that work on the vault file only (sessions, `passwd`, `rotate`, the credential
    /// helpers): a PostgreSQL store is refused before anything is read.
    /// - Throws: `.invalidInput` on a PostgreSQL store.
    func requireFileStore(_ options: VaultOptions) throws {
        guard case .postgres = try storeSelection(options) else { return }
        throw VaultError(.invalidInput, "this command works on a vault file only, not on a PostgreSQL store",
                         fix: "leave out --store and VAULT_STORE; on PostgreSQL use the entry commands, migrate-store, and the session commands with --session NAME")
    }

    /// The storage `request` asks for (`StorageRequest`: which one, opened or created): the one
    /// way a command gets a store. What is opened is kept, so a second request returns it without
    /// a second key derivation, and every open honours the options (`--lock-timeout`, `--accept-rollback`).
    /// - Throws: `.notFound` (nothing to open) or `.alreadyExists` (nothing to create over) before
    ///   any passphrase is asked for; `.invalidInput` for a store the request refuses; the errors
    ///   of opening or creating it.
    func storage<Storage>(_ request: StorageRequest<Storage>, _ options: VaultOptions) async throws -> Storage {
        switch request.target {
        case let .vaultFile(refusingPostgres, result):
            if refusingPostgres { try requireFileStore(options) }
            return result(try vaultFile(options, request.access, allowWeakPassphrase: request.allowsWeakPassphrase))
        case let .selected(result):
            return result(try await selectedStorage(options, request.access, allowWeakPassphrase: request.allowsWeakPassphrase))
        case let .entries(result):
            // The agent comes after `--key-file` and `--passphrase-file` in the key order and before
            // `$VAULT_KEY_FILE`, `$VAULT_PASSPHRASE` and the prompt; see `agent(for:)`.
            guard let (client, directory) = try agent(for: options) else {
                return result(try await selectedStorage(options, .open, allowWeakPassphrase: false))
            }
            return result(AgentStorage(client: client, directory: directory) { [self] in
                try await self.selectedStorage(options, .open, allowWeakPassphrase: false)
            })
        case let .fleetSessions(result):
            guard let selected = try storeSelection(options).postgres else {
                throw VaultError(.invalidInput, "fleet sessions live in a PostgreSQL store", fix: "give --store postgres://…")
            }
            return result(try await postgresStore(options, url: selected.url, name: selected.storeName, .open))
        case let .postgres(url, name, result):
            return result(try await postgresStore(options, url: url, name: name, request.access))
        }
    }

    /// The vault file in `options.directory`: opened once, or created.
    private func vaultFile(_ options: VaultOptions, _ access: StorageAccess,
                           allowWeakPassphrase: Bool) throws -> SecretStore {
        let directory = options.directory
        var storeOptions = options.storeOptions
        storeOptions.allowsWeakPassphrase = allowWeakPassphrase
        switch access {
        case .open:
            if let opened = memo.withLock({ $0.store }), opened.directory == directory { return opened.store }
            guard SecretStore.exists(in: directory) else { throw VaultError.vaultNotFound(path: directory) }
            let store = try SecretStore.open(in: directory, key: try key(options), options: storeOptions)
            memo.withLock { $0.store = (directory, store) }
            return store
        case .create:
            if SecretStore.exists(in: directory) {
                throw VaultError(.alreadyExists, "a vault already exists here", path: directory,
                                 fix: "use it, choose another --vault DIR, or destroy it with 'vault wipe'")
            }
            let store = try SecretStore.create(in: directory, key: try key(options, confirmNew: true), options: storeOptions)
            memo.withLock { $0.store = (directory, store) }
            return store
        case .openOrCreate:
            return try vaultFile(options, SecretStore.exists(in: directory) ? .open : .create, allowWeakPassphrase: allowWeakPassphrase)
        }
    }

    /// The selected store (the vault file, or PostgreSQL in `vault-postgres`), opened or created.
    private func selectedStorage(_ options: VaultOptions, _ access: StorageAccess,
                                 allowWeakPassphrase: Bool) async throws -> any SecretStorage {
        guard let selected = try storeSelection(options).postgres else {
            return try vaultFile(options, access, allowWeakPassphrase: allowWeakPassphrase)
        }
        return try await postgresStore(options, url: selected.url, name: selected.storeName, access)
    }

    /// The PostgreSQL store `name` at `url`: opened once with this process's key, or created (a
    /// passphrase typed on the terminal is asked for twice). `close()` closes it.
    private func postgresStore(_ options: VaultOptions, url: String, name: String, _ access: StorageAccess) async throws
        -> any FleetSessionStore {
        let support = try requirePostgres()
        let store: any FleetSessionStore
        switch access {
        case .open, .openOrCreate:
            if let opened = memo.withLock({ $0.postgresStores.first { $0.url == url && $0.name == name } }) { return opened.store }
            store = try await support.open(url: url, storeName: name, key: try key(options), timeout: options.operationTimeout,
                                           acceptRollback: options.acceptRollback)
        case .create:
            store = try await support.create(url: url, storeName: name, key: try key(options, confirmNew: true),
                                             timeout: options.operationTimeout)
        }
        memo.withLock { $0.postgresStores.append((url, name, store)) }
        return store
    }

    /// The user's agent and the vault's directory as the agent names it, when the entry commands
    /// should ask it (`StorageRequest.entries`): when the key source comes after the agent in the
    /// key order (`KeySource.yieldsToAgent`), the vault file is selected and exists, and an agent
    /// is configured. Nil when they open the vault themselves.
    func agent(for options: VaultOptions) throws -> (client: VaultAgentClient, directory: String)? {
        guard !options.noAgent, keySource(options).yieldsToAgent, memo.withLock({ $0.store == nil }),
              try storeSelection(options).postgres == nil, let client = VaultAgentClient.forCurrentUser(),
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
        try requireFileStore(options)
        return try directly(try vaultFile(options, .open, allowWeakPassphrase: false))
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
            session = SessionManager(fleet: try await storage(.fleetSessions, options), session: fleetSession ?? "", configuration: configuration)
        }
        memo.withLock { $0.session = session }
        return session
    }

    /// True when the options select the vault file's session, false for a fleet session; checks
    /// `--session` against the store first: required on PostgreSQL, refused on the vault file (64).
    func selectsFileSession(_ options: VaultOptions, fleetSession: String?) throws -> Bool {
        guard case .postgres = try storeSelection(options) else {
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
    /// unlocked (in the key order, as `StorageRequest.entries`); nil otherwise. An agent that does not
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
            return SessionManager(store: try vaultFile(options, .open, allowWeakPassphrase: false), configuration: configuration)
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
        guard case .postgres = try storeSelection(options) else {
            let copy = try StoredClientConfiguration.profileCopy(options)
            let sealed = SecretStore.exists(in: options.directory)
                ? try await StoredClientConfiguration.load(from: try await storage(.entries, options)) : nil
            return try StoredClientConfiguration.checked(sealed: sealed, profileCopy: copy)
        }
        return try await StoredClientConfiguration.load(from: try await storage(.fleetSessions, options))
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
        guard case .postgres = try storeSelection(options) else {
            return try oauth.client(for: stored, secret: try await clientSecret(options), requestTimeout: timeout, caBundle: bundle,
                                    dpopKey: dpopKey)
        }
        let secret = try await storage(.fleetSessions, options).readEntry(named: StoredClientConfiguration.secretEntry, owner: "").secret
        return try oauth.client(for: stored, secret: secret, requestTimeout: timeout, caBundle: bundle, dpopKey: dpopKey)
    }

    /// The stored client's DPoP key (`--dpop`), read like its secret.
    func dpopKey(_ options: VaultOptions) async throws -> SecureBytes {
        if case .postgres = try storeSelection(options) {
            return try await storage(.fleetSessions, options).readEntry(named: StoredClientConfiguration.dpopKeyEntry, owner: "").secret
        }
        return try await storage(.entries, options).readEntry(named: StoredClientConfiguration.dpopKeyEntry, owner: "").secret
    }

    /// The OAuth client's secret kept in the vault file, read through the store this context opened
    /// (or, when it opened none, through the agent that holds the vault).
    func clientSecret(_ options: VaultOptions) async throws -> SecureBytes {
        try await storage(.entries, options).readEntry(named: StoredClientConfiguration.secretEntry, owner: "").secret
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

    /// The Secret Service provider's support, or an error naming the missing helper (exit 66).
    func requireSecretService() throws -> any SecretServiceCommandSupport {
        if let secretService { return secretService }
        throw HelperExecutable.secretService.missing()
    }
}
