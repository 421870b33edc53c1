import CredentialVault
import FoundationEssentials
import Logging
import NIOCore
import PostgresNIO
import Synchronization
import VaultCrypto

/// The encrypted token store on PostgreSQL, for apps that run on several machines.
///
/// The database holds ciphertext only: names, owners, labels, timestamps, expiry and values are
/// sealed on the client with the same key hierarchy as the file vault (a KEK from the key file
/// or passphrase wraps a random data key; HKDF subkeys per purpose), and rows are found by a
/// keyed hash of (owner, name). Every write is one transaction that checks and advances a
/// vault-wide generation sealed in the state row, so concurrent writers on many machines lose
/// no update, and a client refuses a database state older than one it has seen (rollback).
public final class PostgresSecretStore: Sendable {
    /// Options for opening or creating a store.
    public struct Options: Sendable {
        /// A generation this caller has already seen; an older database state is refused as a rollback.
        public var minimumGeneration: UInt64
        /// The longest any one operation (including waiting for a connection) may take before the
        /// store reports the server unavailable.
        public var operationTimeout: Duration
        /// The clock for timestamps.
        public var clock: @Sendable () -> Date
        /// Where diagnostics go. Never receives secrets.
        public var logger: Logger
        /// Where this machine remembers the highest generation it has seen of each store, so that a
        /// database put back to an older state is refused by every later process too (default
        /// `.disabled`: only `minimumGeneration` and what one open store has seen; the `vault`
        /// command uses `.standard`, the same folder as the vault files' rollback memory).
        public var rollbackMemory: RollbackMemory = .disabled
        /// Accept a database state older than the one remembered (a restore done on purpose); the
        /// memory then follows the restored state.
        public var acceptRollback = false
        /// The KDF policy for passphrase keys. `package` so that only this package's tests can change it.
        package var kdfPolicy: KDFPolicy = .standard
        /// The layout `create` writes: 3 (bucketed, the default) or 2 (the single state row of
        /// releases before issue 38; `package` so that tests can make a store an older release wrote).
        package var layoutVersion = 3
        /// How many bits of a lookup choose its bucket when `create` or `upgradeLayout` writes a
        /// version 3 store: 2^bits buckets, 4...16, default 14 (16,384). A write reads every row of
        /// its bucket, so its cost follows entries ÷ buckets (about 6 at 100,000 entries); a store
        /// expected to stay small may take fewer (its creation and `list` read every bucket row).
        /// Fixed once the store is written.
        public var bucketBits = PostgresStateV3.defaultBucketBits

        /// Default options: no remembered generation, 10 s per operation, the system clock, no logging.
        public init(minimumGeneration: UInt64 = 0, operationTimeout: Duration = .seconds(10),
                    clock: @escaping @Sendable () -> Date = { Date() },
                    logger: Logger = Logger(label: "vault.postgres", factory: { _ in SwiftLogNoOpLogHandler() })) {
            self.minimumGeneration = minimumGeneration
            self.operationTimeout = operationTimeout
            self.clock = clock
            self.logger = logger
        }
    }

    /// The store name inside the database.
    public let storeName: String
    let configuration: PostgresStoreConfiguration
    let options: Options
    /// The pool of whichever configured host is the primary (`PostgresPrimarySelection`).
    let client: PostgresPrimaryClient
    let vaultID: [UInt8]
    let keys: PostgresDataKeys
    private let runner: Task<Void, Never>
    private let highestGeneration: Mutex<UInt64>
    /// The last state this store opened, by the `xmin` of the row it came in (the transaction that
    /// wrote that row version; every UPDATE makes a new one): `entry(named:)` has the database send
    /// the state only when the row changed, so the common read neither sends nor even reads its
    /// TOASTed bytes. `xmin` is not authenticated and need not be: what it decides is only whether
    /// this store's own verified copy is used, and that copy is one it accepted before (at or above
    /// the rollback floor), as if the database had been put back to it, which is accepted anyway.
    private let lastState = Mutex<(rowVersion: String, state: PostgresVaultState)?>(nil)
    /// False once the server (or a pooler in front of it) refused a named prepared statement:
    /// `entry(named:)` then sends its query unprepared.
    let preparedReads = Atomic<Bool>(true)
    /// True when `vault_bucket_write_v3` was there, in the tables' schema and with their owner, when
    /// the store was opened (`PostgresSchema.writeProcedureUsable`); false from then on once a call
    /// of it was refused (dropped, a pooler that wraps statements in a transaction): a write of one
    /// entry then sends its compare-and-set and a statement that waits for its commit instead.
    let writesByProcedure: Atomic<Bool>
    /// The generation remembered on this machine when the store was opened (0 for none).
    private let rememberedAtOpen: UInt64
    /// The store's layout: one state row (versions 1 and 2) or buckets (version 3). Changes once,
    /// when this store (or another process) moves it to version 3.
    let layout: Mutex<PostgresStoreLayout>
    /// The highest generation seen of each bucket (version 3), seeded from this machine's record.
    let bucketsSeen: Mutex<PostgresBucketGenerations>
    /// The bucket record remembered on this machine when the store was opened (empty for none).
    private let rememberedBucketsAtOpen: [UInt64]

    private init(configuration: PostgresStoreConfiguration, options: Options, client: PostgresPrimaryClient,
                 runner: Task<Void, Never>, vaultID: [UInt8], keys: PostgresDataKeys, generation: UInt64, remembered: UInt64 = 0,
                 layout: PostgresStoreLayout = .single, rememberedBuckets: [UInt64] = [], writesByProcedure: Bool = false) {
        self.writesByProcedure = Atomic(writesByProcedure)
        self.storeName = configuration.storeName
        self.configuration = configuration
        self.options = options
        self.client = client
        self.runner = runner
        self.vaultID = vaultID
        self.keys = keys
        self.highestGeneration = Mutex(generation)
        self.rememberedAtOpen = remembered
        self.layout = Mutex(layout)
        self.rememberedBucketsAtOpen = rememberedBuckets
        // With acceptRollback too: a bucket read older than remembered is accepted (observeBucket),
        // and only the buckets read are rewritten at close; the others keep their floors.
        self.bucketsSeen = Mutex(PostgresBucketGenerations(remembered: rememberedBuckets))
    }

    /// The highest generation this store has seen (the database's, after the last operation). For
    /// a version 3 (bucketed) store, the sum of the highest generation seen of each bucket read or
    /// written (and remembered on this machine): it only grows, but it is not the database's count of writes.
    public var generation: UInt64 {
        if case .buckets = layout.withLock({ $0 }) { return bucketsSeen.withLock { $0.sum } }
        return highestGeneration.withLock { $0 }
    }

    /// Closes the connection pool (remembering the highest generation seen, with
    /// `Options.rollbackMemory`). The store cannot be used afterwards.
    public func close() async {
        if case let .buckets(bits) = layout.withLock({ $0 }) {
            let (seen, observed) = bucketsSeen.withLock { ($0.record(bucketCount: 1 << Int(bits)), $0.observed) }
            // A command that read nothing writes nothing; with acceptRollback, only the buckets read
            // take the (possibly lower) generation read, the others keep the record's.
            let changed = seen != rememberedBucketsAtOpen && seen.contains(where: { $0 > 0 })
            if !observed.isEmpty && (options.acceptRollback || changed) {
                StoreBucketMemory(memory: options.rollbackMemory, logger: options.logger)
                    .write(storeID: vaultID, bucketBits: bits, generations: seen, key: keys.state,
                           replacing: options.acceptRollback ? observed : [])
            }
        }
        let seen = highestGeneration.withLock { $0 }
        if seen > rememberedAtOpen || (options.acceptRollback && seen != rememberedAtOpen) {
            StoreGenerationMemory(memory: options.rollbackMemory, logger: options.logger)
                .write(storeID: vaultID, generation: seen, key: keys.state, replacing: options.acceptRollback)
        }
        runner.cancel()
        await runner.value
    }

    // MARK: - Opening

    /// Creates the tables if needed and a new, empty vault named `configuration.storeName`.
    /// - Throws: `.alreadyExists` when the store name is taken; `.invalidKey`; `.invalidInput` for a weak
    ///   passphrase or an unusable trust roots file (`PGSSLROOTCERT`); `.serverUnavailable` when the server cannot be reached.
    public static func create(configuration: PostgresStoreConfiguration, key: VaultKey,
                              options: Options = Options()) async throws -> PostgresSecretStore {
        try key.validate()
        if case .passphrase = key { try PassphraseStrength.check(key) }
        let (client, runner) = try makeClient(configuration, options: options)
        do {
            let vaultID = try SecureRandom.bytes(count: PostgresLayout.vaultIDByteCount)
            let dek = try SymmetricKey.generate()
            let slotParameters = try KeyHierarchy.newSlotParameters(for: key, policy: options.kdfPolicy)
            let kek = try KeyHierarchy.deriveKEK(key: key, kind: slotParameters.kind, parameters: slotParameters.parameters,
                                                 salt: slotParameters.salt, policy: options.kdfPolicy, path: nil,
                                                 keyMaterialInfo: PostgresLayout.kekInfo)
            let aad = PostgresKeySlot.aad(vaultID: vaultID, kind: slotParameters.kind.rawValue,
                                          parameters: slotParameters.parameters, salt: slotParameters.salt)
            let slot = PostgresKeySlot(kind: slotParameters.kind.rawValue, parameters: slotParameters.parameters,
                                       salt: slotParameters.salt,
                                       wrapped: try AES256GCM.seal(dek.bytes, using: kek, authenticating: aad))
            let keys = try PostgresDataKeys(dek: dek, vaultID: vaultID)
            let storeName = configuration.storeName
            let bucketed = options.layoutVersion >= 3
            let bits = options.bucketBits
            guard PostgresStateV3.bucketBitsRange.contains(bits) else {
                throw VaultError(.invalidInput, "a store has between 2^4 and 2^16 buckets")
            }
            let state = bucketed
                ? try PostgresStateV3(bucketBits: bits).sealed(vaultID: vaultID, storeName: storeName, keys: keys)
                : try PostgresVaultState.make(generation: 0, rows: [:]).sealed(vaultID: vaultID, storeName: storeName, keys: keys)
            let emptyBuckets = bucketed ? try (0..<UInt32(1 << Int(bits))).map { bucket in
                try PostgresBucket(generation: 0, rows: [:]).sealed(vaultID: vaultID, storeName: storeName, bucket: bucket, keys: keys)
            } : []
            let logger = options.logger
            let procedure = try await PostgresErrors.guarding(configuration, timeout: options.operationTimeout, watch: client.selection.deadlines) {
                try await client.withTransaction(logger: logger) { connection -> Bool in
                    let procedure = try await ensureSchema(connection, logger: logger)
                    // One statement decides, not a check before the insert: of clients creating
                    // the same name at once, one inserts and the others (waiting on its key) insert nothing.
                    var inserted = false
                    for try await _ in try await connection.queryIfOpen("""
                        INSERT INTO vault_stores (store_name, vault_id, key_slot, state)
                        VALUES (\(storeName), \(ByteBuffer(bytes: vaultID)), \(ByteBuffer(bytes: slot.encoded())), \(ByteBuffer(bytes: state)))
                        ON CONFLICT (store_name) DO NOTHING RETURNING 1
                        """, logger: logger).decode(Int32.self) {
                        inserted = true
                    }
                    guard inserted else {
                        throw VaultError(.alreadyExists, "a vault named \(TerminalText.escaped(storeName)) already exists in this database",
                                         fix: "open it, or choose another store name")
                    }
                    if bucketed {
                        try await insertBuckets(emptyBuckets, vaultID: vaultID, on: connection, logger: logger)
                    }
                    return procedure
                }
            }
            return PostgresSecretStore(configuration: configuration, options: options, client: client, runner: runner,
                                       vaultID: vaultID, keys: keys, generation: 0, layout: bucketed ? .buckets(bits: bits) : .single,
                                       writesByProcedure: procedure)
        } catch {
            runner.cancel()
            await runner.value
            throw error
        }
    }

    /// Opens the vault named `configuration.storeName`, checking the key and the state row.
    /// - Throws: `.notFound`, `.wrongKey`, `.invalidKey`, `.tampered`, `.corrupt`, `.unsupportedVersion`,
    ///   `.kdfOutsidePolicy`, `.rollbackDetected`, `.serverUnavailable`; `.invalidInput` for an unusable
    ///   trust roots file (`PGSSLROOTCERT`).
    public static func open(configuration: PostgresStoreConfiguration, key: VaultKey,
                            options: Options = Options()) async throws -> PostgresSecretStore {
        try key.validate()
        let (client, runner) = try makeClient(configuration, options: options)
        do {
            let storeName = configuration.storeName
            let logger = options.logger
            let row: (vaultID: [UInt8], slot: [UInt8], state: [UInt8], procedure: Bool) = try await PostgresErrors.guarding(
                configuration, timeout: options.operationTimeout, watch: client.selection.deadlines) {
                let found = try await client.withConnection { connection in
                    let rows = try await connection.queryIfOpen("""
                        SELECT vault_id, key_slot, state, \(unescaped: PostgresSchema.writeProcedureUsable)
                        FROM vault_stores WHERE store_name = \(storeName)
                        """, logger: logger)
                    var found: (vaultID: [UInt8], slot: [UInt8], state: [UInt8], procedure: Bool)?
                    for try await (vaultID, slot, state, procedure) in rows.decode((ByteBuffer, ByteBuffer, ByteBuffer, Bool?).self) {
                        found = (Array(buffer: vaultID), Array(buffer: slot), Array(buffer: state), procedure == true)
                    }
                    return found
                }
                if let found { return found }
                throw VaultError(.notFound, "no vault named \(TerminalText.escaped(storeName)) in this database",
                                 fix: "create it first, or check the store name")
            }
            guard row.vaultID.count == PostgresLayout.vaultIDByteCount else { throw VaultError.corrupt("the vault id is not 16 bytes") }
            let slot = try PostgresKeySlot.decode(row.slot)
            guard let kind = KeySlotKind(rawValue: slot.kind) else { throw VaultError.corrupt("unknown key slot kind \(slot.kind)") }
            let kek = try KeyHierarchy.deriveKEK(key: key, kind: kind, parameters: slot.parameters, salt: slot.salt,
                                                 policy: options.kdfPolicy, path: nil, keyMaterialInfo: PostgresLayout.kekInfo)
            let dek: SymmetricKey
            do {
                dek = SymmetricKey(bytes: try AES256GCM.open(slot.wrapped, using: kek, authenticating: PostgresKeySlot.aad(
                    vaultID: row.vaultID, kind: slot.kind, parameters: slot.parameters, salt: slot.salt)))
            } catch {
                throw VaultError.wrongKey
            }
            let keys = try PostgresDataKeys(dek: dek, vaultID: row.vaultID)
            if PostgresStateV3.isVersion3(row.state) {
                // The state binds the name and the layout; generations live in the bucket rows, read as needed.
                let state = try PostgresStateV3.open(row.state, vaultID: row.vaultID, storeName: storeName, keys: keys)
                let remembered = StoreBucketMemory(memory: options.rollbackMemory, logger: logger)
                    .read(storeID: row.vaultID, bucketBits: state.bucketBits, key: keys.state) ?? []
                return PostgresSecretStore(configuration: configuration, options: options, client: client, runner: runner,
                                           vaultID: row.vaultID, keys: keys, generation: 0,
                                           layout: .buckets(bits: state.bucketBits), rememberedBuckets: remembered,
                                           writesByProcedure: row.procedure)
            }
            let state = try PostgresVaultState.open(row.state, vaultID: row.vaultID, storeName: storeName, keys: keys)
            // A machine that has seen this store in layout 3 refuses a version 1 or 2 state of it:
            // the database was put back to before the upgrade (its pg-<id>.generation may be older).
            if !options.acceptRollback,
               StoreBucketMemory(memory: options.rollbackMemory, logger: logger).remembers(storeID: row.vaultID, key: keys.state) {
                throw VaultError(.rollbackDetected,
                                 "the database holds this vault as it was before its move to layout 3, which this machine has already seen",
                                 fix: "restore the newer database state, or open with acceptRollback if the restore was deliberate")
            }
            let remembered = StoreGenerationMemory(memory: options.rollbackMemory, logger: logger)
                .read(storeID: row.vaultID, key: keys.state) ?? 0
            try checkRollback(state.generation, remembered: max(options.minimumGeneration, options.acceptRollback ? 0 : remembered))
            return PostgresSecretStore(configuration: configuration, options: options, client: client, runner: runner,
                                       vaultID: row.vaultID, keys: keys, generation: state.generation, remembered: remembered,
                                       writesByProcedure: row.procedure)
        } catch {
            runner.cancel()
            await runner.value
            throw error
        }
    }

    /// The store's client and the task that runs it (cancel it to close): the hosts'
    /// `PostgresPrimarySelection`, which reaches each host through a pool of its own.
    /// - Throws: `.invalidInput` for a trust roots file that cannot be used (before any connection).
    static func makeClient(_ configuration: PostgresStoreConfiguration,
                           options: Options) throws -> (PostgresPrimaryClient, Task<Void, Never>) {
        let needsTLS = configuration.endpoints.contains { $0.transport == .tlsRequired }
        let tls: PostgresClient.Configuration.TLS = needsTLS ? .require(try configuration.tlsClientConfiguration()) : .disable
        let logger = options.logger
        let selection = PostgresPrimarySelection(configuration: configuration, logger: logger) { endpoint in
            makeEndpointClient(configuration, endpoint: endpoint, tls: endpoint.transport == .plainLoopback ? .disable : tls,
                               logger: logger)
        }
        let runner = Task { await selection.run() }
        return (selection.client, runner)
    }

    /// A connection pool (not yet running) to one of the configuration's hosts.
    static func makeEndpointClient(_ configuration: PostgresStoreConfiguration, endpoint: PostgresStoreConfiguration.Endpoint,
                                   tls: PostgresClient.Configuration.TLS, logger: Logger) -> PostgresClient {
        var pgConfiguration = PostgresClient.Configuration(
            host: endpoint.connectionHost, port: endpoint.port, username: configuration.username,
            password: configuration.password.map { bytes in bytes.withUnsafeBytes { String(decoding: $0, as: UTF8.self) } },
            database: configuration.database, tls: tls)
        pgConfiguration.options.maximumConnections = max(1, configuration.maximumConnections)
        pgConfiguration.options.connectTimeout = configuration.connectTimeout
        pgConfiguration.options.keepAliveBehavior = nil
        return PostgresClient(configuration: pgConfiguration, backgroundLogger: logger)
    }

    /// Creates the tables and the write procedure unless they are there, inside the caller's
    /// transaction. Only the first store of a database takes the schema lock; later ones see all
    /// three tables and the procedure and go on without it (a database an older release made,
    /// without `vault_buckets` or the procedure, gets them here). The procedure is best effort:
    /// a role that may not create it still gets its store, whose writes then take three statements.
    /// - Returns: whether the procedure may be used (`PostgresSchema.writeProcedureUsable`).
    @discardableResult
    static func ensureSchema(_ connection: PostgresConnection, logger: Logger) async throws -> Bool {
        var tables = false, procedure = false
        for try await (tablesThere, procedureThere) in try await connection.queryIfOpen(PostgresSchema.tablesPresent, logger: logger)
            .decode((Bool, Bool).self) {
            (tables, procedure) = (tablesThere, procedureThere)
        }
        if tables && procedure { return try await writeProcedureUsable(connection, logger: logger) }
        try await connection.queryIfOpen("SELECT pg_advisory_xact_lock(\(PostgresSchema.schemaLockKey))", logger: logger)
        // Again under the lock: another process may have made them meanwhile.
        for try await (tablesThere, procedureThere) in try await connection.queryIfOpen(PostgresSchema.tablesPresent, logger: logger)
            .decode((Bool, Bool).self) {
            (tables, procedure) = (tablesThere, procedureThere)
        }
        if !tables {
            try await connection.queryIfOpen(PostgresSchema.createStores, logger: logger)
            try await connection.queryIfOpen(PostgresSchema.createEntries, logger: logger)
            try await connection.queryIfOpen(PostgresSchema.createBuckets, logger: logger)
        }
        if !procedure {
            try await connection.queryIfOpen("SAVEPOINT vault_write_procedure", logger: logger)
            do {
                try await connection.queryIfOpen(PostgresSchema.createWriteProcedure, logger: logger)
                try await connection.queryIfOpen("RELEASE SAVEPOINT vault_write_procedure", logger: logger)
            } catch let error as PSQLError where error.code == .server {
                try await connection.queryIfOpen("ROLLBACK TO SAVEPOINT vault_write_procedure", logger: logger)
                logger.notice("the write procedure vault_bucket_write_v3 could not be created; writes of one entry take three statements",
                              metadata: ["sqlstate": "\(error.serverInfo?[.sqlState] ?? "?")"])
            }
        }
        return try await writeProcedureUsable(connection, logger: logger)
    }

    /// `PostgresSchema.writeProcedureUsable`, asked on `connection`.
    static func writeProcedureUsable(_ connection: PostgresConnection, logger: Logger) async throws -> Bool {
        var usable = false
        for try await answer in try await connection.queryIfOpen(PostgresQuery(unsafeSQL: "SELECT " + PostgresSchema.writeProcedureUsable),
                                                           logger: logger).decode(Bool?.self) {
            usable = answer == true
        }
        return usable
    }

    static func checkRollback(_ generation: UInt64, remembered: UInt64) throws {
        guard generation >= remembered else {
            throw VaultError(.rollbackDetected,
                             "the database holds generation \(generation) of this vault, older than generation \(remembered) already seen",
                             fix: "restore the newer database state, or open with a lower minimum generation if the restore was deliberate")
        }
    }

    // MARK: - Reading

    /// The entry named `name` of `owner`, read in one statement together with the state row.
    /// - Throws: `.notFound`, `.tampered`, `.rollbackDetected`, `.serverUnavailable`.
    public func entry(named name: String, owner: String = "") async throws -> VaultEntry {
        if case let .buckets(bits) = layout.withLock({ $0 }) {
            return try await bucketEntry(named: name, owner: owner, bits: bits)
        }
        let lookup = try PostgresRowCodec.lookup(owner: owner, name: name, keys: keys)
        let vaultID = ByteBuffer(bytes: self.vaultID)
        let floor = generation
        let cached = lastState.withLock { $0 }
        let knownVersion = cached?.rowVersion ?? ""
        let statement = PostgresEntryRead(vaultID: vaultID, lookup: ByteBuffer(bytes: lookup), knownVersion: knownVersion)
        let row: (state: [UInt8]?, rowVersion: String, rowGeneration: Int64?, sealed: [UInt8]?) = try await guarding {
            let answer = try await self.lastRow(of: statement)
            guard let (state, version, rowGeneration, sealed) = answer else {
                throw VaultError(.notFound, "the vault's state row is gone from the database", fix: "restore the database or re-create the vault")
            }
            return (state.map { Array(buffer: $0) }, version, rowGeneration, sealed.map { Array(buffer: $0) })
        }
        let state: PostgresVaultState
        if let sealedState = row.state, PostgresStateV3.isVersion3(sealedState) {
            // Another process moved the store to buckets since this one opened it.
            try adoptBucketLayout(sealedState)
            return try await entry(named: name, owner: owner)
        } else if let sealedState = row.state {
            state = try observe(PostgresVaultState.open(sealedState, vaultID: self.vaultID, storeName: storeName, keys: keys), seenBefore: floor)
            lastState.withLock { $0 = (row.rowVersion, state) }
        } else if let cached, cached.rowVersion == row.rowVersion {
            state = try observe(cached.state, seenBefore: floor)
        } else {
            throw VaultError.tampered(region: "state row (missing)")
        }
        let expected = state.rowGenerations?[lookup]
        guard let rowGeneration = row.rowGeneration, let sealed = row.sealed else {
            // The sealed state lists every row: one it lists but the database lacks was deleted behind the store's back.
            if expected != nil { throw VaultError.tampered(region: "entry row (deleted)") }
            throw VaultError.entryNotFound(owner.isEmpty ? name : owner + "/" + name)
        }
        guard rowGeneration >= 1, UInt64(rowGeneration) <= state.generation else {
            throw VaultError.tampered(region: "entry row (generation)")
        }
        if state.rowGenerations != nil, expected != UInt64(rowGeneration) {
            // An older copy of the row put back (or one the state does not list): its generation is not the sealed one.
            throw VaultError.tampered(region: "entry row (an older copy, or a row the sealed state does not list)")
        }
        return try PostgresRowCodec.open(sealed, vaultID: self.vaultID, lookup: lookup, rowGeneration: UInt64(rowGeneration), keys: keys)
    }

    /// The secret of the entry named `name` of `owner` (as `SecretStore.secret(named:owner:)`).
    /// - Throws: the errors of `entry(named:owner:)`.
    public func secret(named name: String, owner: String = "") async throws -> SecureBytes {
        try await entry(named: name, owner: owner).secret
    }

    /// Every entry's metadata (of `owner` when given), after checking the whole row set against
    /// the sealed state: a deleted, added, or rolled-back row is refused as tampering.
    public func list(owner: String? = nil) async throws -> [EntryMetadata] {
        let entries: [VaultEntry]
        if case let .buckets(bits) = layout.withLock({ $0 }) {
            entries = try await readAllBuckets(bits: bits).entries
        } else if let legacy = try await readAll() {
            entries = legacy.entries
        } else {
            return try await list(owner: owner)
        }
        return entries.map(\.metadata).filter { owner == nil || $0.owner == owner }
            .sorted { ($0.owner, $0.name) < ($1.owner, $1.name) }
    }


    /// The state and every entry of a version 1 or 2 store; nil when the store turned out to be
    /// moved to version 3 meanwhile (this store then uses that layout).
    private func readAll() async throws -> (state: PostgresVaultState, entries: [VaultEntry])? {
        let floor = generation
        let fetched = try await fetchAllRows()
        if PostgresStateV3.isVersion3(fetched.state) {
            try adoptBucketLayout(fetched.state)
            return nil
        }
        let state = try observe(PostgresVaultState.open(fetched.state, vaultID: self.vaultID, storeName: storeName, keys: keys), seenBefore: floor)
        try Self.checkRowSet(fetched.rows.map { ($0.lookup, $0.rowGeneration) }, against: state)
        let entries = try fetched.rows.map { row in
            try PostgresRowCodec.open(row.sealed, vaultID: self.vaultID, lookup: row.lookup,
                                      rowGeneration: UInt64(row.rowGeneration), keys: keys)
        }
        return (state, entries)
    }

    /// The sealed state and every row of this vault, read in one statement (one snapshot).
    func fetchAllRows() async throws -> (state: [UInt8], rows: [(lookup: [UInt8], rowGeneration: Int64, sealed: [UInt8])]) {
        let vaultID = ByteBuffer(bytes: self.vaultID)
        let logger = options.logger
        let client = self.client
        let fetched: (state: [UInt8], rows: [(lookup: [UInt8], rowGeneration: Int64, sealed: [UInt8])]) = try await guarding {
            // Taken eagerly (`PostgresEagerRows`): a full read spans many reads of the socket.
            let rows = try await client.eagerRows("""
                SELECT s.state, e.lookup, e.row_generation, e.sealed FROM vault_stores s
                LEFT JOIN vault_entries e ON e.vault_id = s.vault_id
                WHERE s.vault_id = \(vaultID)
                """, logger: logger) { row in
                try row.decode((ByteBuffer, ByteBuffer?, Int64?, ByteBuffer?).self)
            }
            var state: [UInt8]?
            var result: [(lookup: [UInt8], rowGeneration: Int64, sealed: [UInt8])] = []
            for (sealedState, lookup, rowGeneration, sealed) in rows {
                state = Array(buffer: sealedState)
                if let lookup, let rowGeneration, let sealed {
                    result.append((Array(buffer: lookup), rowGeneration, Array(buffer: sealed)))
                }
            }
            guard let state else {
                throw VaultError(.notFound, "the vault's state row is gone from the database", fix: "restore the database or re-create the vault")
            }
            return (state, result)
        }
        return fetched
    }

    static func checkRowSet(_ rows: [(lookup: [UInt8], rowGeneration: Int64)], against state: PostgresVaultState) throws {
        guard rows.count == Int(state.entryCount) else {
            throw VaultError.tampered(region: "entry rows (\(rows.count) rows, the state says \(state.entryCount))")
        }
        guard rows.allSatisfy({ $0.rowGeneration >= 1 && UInt64($0.rowGeneration) <= state.generation }) else {
            throw VaultError.tampered(region: "entry rows (generation)")
        }
        let digest = try PostgresVaultState.digest(of: rows.map { ($0.lookup, UInt64($0.rowGeneration)) })
        guard digest == state.rowSetDigest else { throw VaultError.tampered(region: "entry rows (row set)") }
    }

    /// Records a generation read by a statement sent after `floor` was the highest generation
    /// seen, refusing one older than `floor` (a rollback). `floor` is read before the statement
    /// is sent: every generation seen by then was committed before it and is visible to it, while
    /// one a concurrent operation of this store records meanwhile may be newer than its snapshot
    /// without any rollback.
    func observe(_ state: PostgresVaultState, seenBefore floor: UInt64) throws -> PostgresVaultState {
        try Self.checkRollback(state.generation, remembered: floor)
        recordCommitted(state)
        return state
    }

    /// Raises the highest generation seen to `state`'s (a state this store read or just committed).
    func recordCommitted(_ state: PostgresVaultState) {
        highestGeneration.withLock { $0 = max($0, state.generation) }
    }

    /// Runs `body` with this store's timeout and error mapping. A failure that lost the primary
    /// (the server went away, answered as a standby, refused a write as read-only) has the next
    /// operation probe the hosts again; a read (`retryingRead`) is sent once more, within the same
    /// deadline, to the primary found then. A write is not retried: one cut off may have committed,
    /// so the caller sees `.serverUnavailable` and its next call goes to the new primary.
    /// With `progress`, the deadline applies to each statement (`PostgresErrors.guarding(_:timeout:progress:watch:_:)`).
    /// `timeout` replaces `Options.operationTimeout` (a refresh allows for the refresher's own time).
    func guarding<T: Sendable>(retryingRead: Bool = false, progress: PostgresProgress? = nil, timeout: Duration? = nil,
                               _ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let selection = client.selection
        let attempt: @Sendable () async throws -> T = {
            do {
                return try await body()
            } catch where PostgresPrimarySelection.lostPrimary(error) {
                selection.markStale()
                throw selection.unavailable(after: error)
            }
        }
        do {
            return try await PostgresErrors.guarding(configuration, timeout: timeout ?? options.operationTimeout, progress: progress,
                                                    watch: selection.deadlines) {
                guard retryingRead else { return try await attempt() }
                do {
                    return try await attempt()
                } catch where PostgresPrimarySelection.lostPrimary(error) {
                    return try await attempt()
                }
            }
        } catch let error as VaultError where error.code == .serverUnavailable {
            selection.markStale()
            throw error
        }
    }
}

extension Array where Element == UInt8 {
    /// The readable bytes of a buffer.
    init(buffer: ByteBuffer) {
        self = buffer.getBytes(at: buffer.readerIndex, length: buffer.readableBytes) ?? []
    }
}
