import FoundationEssentials
#if canImport(Glibc)
import Glibc
#else
#error("vault runs on Linux (Glibc)")
#endif
import Logging
import Synchronization
import VaultCrypto

/// The encrypted token store: named secrets with metadata in one authenticated vault file.
///
/// Thread-safe. Every read sees a complete committed file; every write takes an
/// exclusive `flock` on a separate lock file, re-reads the vault, applies the change
/// and replaces the file durably (temp file 0600, fsync, rename, fsync directory).
public final class SecretStore: Sendable {
    /// Options for opening or creating a store.
    public struct Options: Sendable {
        /// How long to wait for another process's lock before failing with `.busy`.
        public var lockTimeout: Duration
        /// Accept a new passphrase shorter than `PassphraseStrength.minimumBytes` in `create`
        /// and `changeKey`. Opening an existing vault never checks strength.
        public var allowsWeakPassphrase = false
        /// The clock for timestamps.
        public var clock: @Sendable () -> Date
        /// A generation this caller has already seen (for example from a previous run);
        /// an older file is refused as a rollback.
        public var minimumGeneration: UInt64
        /// Where diagnostics go. Never receives secrets.
        public var logger: Logger
        /// Where the highest generation seen of each vault is remembered across runs
        /// (default: `$XDG_STATE_HOME/vault/generations`, else `~/.local/state/vault/generations`).
        public var rollbackMemory: RollbackMemory
        /// Accept a vault file older than the remembered generation (a backup restored on purpose);
        /// the memory is then reset to it. It does not accept a raised KDF cost: see `acceptsRaisedKDFCost`.
        public var acceptRollback: Bool
        /// Open a passphrase vault whose scrypt cost is above what this build writes, running the
        /// KDF at that cost (up to a GiB and seconds per open). Off by default: such a header is
        /// refused before scrypt runs (`.suspiciousKDFParameters`). This machine's rollback record
        /// plays no part: it cannot be authenticated before the key is derived.
        public var acceptsRaisedKDFCost: Bool
        /// The KDF policy. `package` so that only this package's tests can change it.
        package var kdfPolicy: KDFPolicy

        /// Default options: 10 s lock timeout, the system clock, no remembered generation, no logging.
        public init(lockTimeout: Duration = .seconds(10), clock: @escaping @Sendable () -> Date = { Date() },
                    minimumGeneration: UInt64 = 0,
                    logger: Logger = Logger(label: "vault.store", factory: { _ in SwiftLogNoOpLogHandler() })) {
            self.lockTimeout = lockTimeout
            self.clock = clock
            self.minimumGeneration = minimumGeneration
            self.logger = logger
            self.rollbackMemory = .standard
            self.acceptRollback = false
            self.acceptsRaisedKDFCost = false
            self.kdfPolicy = .standard
        }
    }

    /// The file names inside a vault directory.
    public enum FileNames {
        /// The vault file.
        public static let vault = "secrets.vault"
        /// The lock file (never holds data).
        public static let lock = "secrets.lock"
    }

    /// The vault directory.
    public let directory: String
    /// The vault file's path.
    public let vaultPath: String
    let lockPath: String
    let options: Options
    let records: RollbackRecordStore
    private let state: Mutex<State>

    struct State: ~Copyable {
        var key: VaultKey
        var kekCache: [KEKCacheKey: SymmetricKey] = [:]
        var dataKeysCache: (dek: SymmetricKey, vaultID: [UInt8], keys: DataKeys)?
        var highestGeneration: UInt64
        var vaultID: [UInt8]?
        /// The last file decoded and what it decoded to. Decoding is a pure function of the bytes
        /// and the key, so a byte-identical file is not decoded again (`open` followed by `secret`
        /// reads the file twice). Holds no plaintext secret: values stay sealed.
        var lastDecoded: DecodedFile?
    }

    struct DecodedFile {
        var file: [UInt8]
        var image: VaultImage
        var keys: DataKeys
        var kek: SymmetricKey

        /// Byte-for-byte equality (`memcmp`: the file can be hundreds of megabytes).
        func matches(_ other: [UInt8]) -> Bool {
            guard file.count == other.count else { return false }
            return file.withUnsafeBytes { cached in
                other.withUnsafeBytes { fresh in
                    guard let a = cached.baseAddress, let b = fresh.baseAddress else { return cached.count == 0 }
                    return memcmp(a, b, cached.count) == 0
                }
            }
        }
    }

    struct KEKCacheKey: Hashable {
        var kind: UInt8
        var parameters: Scrypt.Parameters
        var salt: [UInt8]
    }

    private init(directory: String, key: VaultKey, options: Options) {
        self.directory = directory
        self.vaultPath = PathText.joining(directory, FileNames.vault)
        self.lockPath = PathText.joining(directory, FileNames.lock)
        self.options = options
        self.records = RollbackRecordStore(directory: options.rollbackMemory.directory(), logger: options.logger)
        self.state = Mutex(State(key: key, highestGeneration: options.minimumGeneration))
    }

    /// True when a vault file exists in `directory`.
    public static func exists(in directory: String) -> Bool {
        SecureFileSystem.exists(PathText.joining(directory, FileNames.vault))
    }

    /// Creates a new, empty vault in `directory` (made 0700 if missing).
    /// - Parameters:
    ///   - directory: The vault directory.
    ///   - key: The passphrase or key material that will open it.
    ///   - options: Timeouts, clock, logger.
    /// - Returns: The open store.
    /// - Throws: `.alreadyExists` when a vault is there; `.invalidKey`; `.invalidInput` for a passphrase under `PassphraseStrength.minimumBytes` (unless `options.allowsWeakPassphrase`); `.insecurePermissions`; `.io`.
    public static func create(in directory: String, key: VaultKey, options: Options = Options()) throws -> SecretStore {
        try key.validate()
        if !options.allowsWeakPassphrase { try PassphraseStrength.check(key) }
        try SecureFileSystem.ensurePrivateDirectory(directory, create: true)
        let store = SecretStore(directory: directory, key: key, options: options)
        try store.createFile()
        return store
    }

    /// Opens the vault in `directory`, checking permissions, the key and every authenticated region but the secrets.
    /// - Throws: `.notFound`, `.wrongKey`, `.invalidKey`, `.corrupt`, `.tampered`, `.unsupportedVersion`,
    ///   `.kdfOutsidePolicy`, `.suspiciousKDFParameters`, `.insecurePermissions`, `.rollbackDetected`, `.io`.
    public static func open(in directory: String, key: VaultKey, options: Options = Options()) throws -> SecretStore {
        try key.validate()
        let store = SecretStore(directory: directory, key: key, options: options)
        guard SecureFileSystem.exists(store.vaultPath) else { throw VaultError.vaultNotFound(path: directory) }
        try SecureFileSystem.checkPrivateDirectory(directory)
        _ = try store.state.withLock { state in try store.load(&state) }
        return store
    }

    // MARK: Reading

    /// The vault's random id, in hex.
    public var vaultID: String {
        state.withLock { state in (state.vaultID ?? []).hexString }
    }

    /// The highest generation this store has seen (it increases by one with every write).
    public var generation: UInt64 { state.withLock { $0.highestGeneration } }

    /// The key the store opens the vault with (for a session over this store).
    var key: VaultKey { state.withLock { $0.key } }

    /// Metadata of every entry (or of one owner's), without secrets.
    /// - Throws: the errors of `open`.
    public func list(owner: String? = nil) throws -> [EntryMetadata] {
        try snapshot { $0.list(owner: owner) }
    }

    /// One entry's metadata.
    /// - Throws: `.notFound`, and the errors of `open`.
    public func metadata(named name: String, owner: String = "") throws -> EntryMetadata {
        try snapshot { view in
            guard let metadata = view.metadata(named: name, owner: owner) else { throw VaultError.entryNotFound(name) }
            return metadata
        }
    }

    /// One entry with its secret.
    /// - Throws: `.notFound`, `.tampered`, and the errors of `open`.
    public func entry(named name: String, owner: String = "") throws -> VaultEntry {
        try read { image, keys in
            guard let position = image.index(of: EntryKey(owner: owner, name: name)) else { throw VaultError.entryNotFound(name) }
            let sealed = image.entries[position]
            return VaultEntry(metadata: sealed.metadata, secret: try sealed.open(vaultID: image.vaultID, key: keys.value, path: vaultPath))
        }
    }

    /// One entry's secret.
    /// - Throws: `.notFound`, `.tampered`, and the errors of `open`.
    public func secret(named name: String, owner: String = "") throws -> SecureBytes {
        try entry(named: name, owner: owner).secret
    }

    /// Authenticates the header, the index and every secret.
    /// - Returns: A report listing entries that failed.
    /// - Throws: when the header or index fail (nothing can be checked then).
    public func verify() throws -> VerificationReport {
        try read(fromDisk: true) { image, keys in
            var failures: [VerificationReport.Failure] = []
            for sealed in image.entries {
                do {
                    _ = try sealed.open(vaultID: image.vaultID, key: keys.value, path: vaultPath)
                } catch let error as VaultError {
                    failures.append(.init(owner: sealed.owner, name: sealed.name, error: error))
                }
            }
            for record in image.history?.records ?? [] {
                for version in record.versions {
                    do {
                        _ = try version.open(owner: record.owner, name: record.name, vaultID: image.vaultID, key: keys.history, path: vaultPath)
                    } catch let error as VaultError {
                        failures.append(.init(owner: record.owner, name: "\(record.name) (version \(version.version))", error: error))
                    }
                }
            }
            return VerificationReport(vaultID: image.vaultID.hexString, generation: image.generation,
                                      entriesChecked: image.entries.count, failures: failures,
                                      formatVersion: Int(image.majorVersion))
        }
    }

    /// Runs `body` on a consistent read-only view of the vault (no lock; the file is
    /// replaced atomically, so the view is one committed generation).
    /// - Returns: what `body` returns.
    /// - Throws: what `body` throws, and the errors of `open`.
    public func snapshot<T>(_ body: (borrowing VaultTransaction) throws -> T) throws -> T {
        try state.withLock { state in
            let (image, keys, _) = try load(&state)
            let view = VaultTransaction(image: image, keys: keys, now: options.clock(), path: vaultPath)
            return try body(view)
        }
    }

    // MARK: Writing

    /// Adds an entry, or replaces it when `replace` is true.
    /// - Returns: The stored metadata.
    /// - Throws: `.alreadyExists` without `replace`, `.invalidInput`, `.busy`, and the errors of `open`.
    @discardableResult
    public func put(_ entry: NewEntry, replace: Bool = false) throws -> EntryMetadata {
        try update { transaction in try transaction.put(entry, replace: replace) }
    }

    /// Removes an entry.
    /// - Throws: `.notFound`, `.busy`, and the errors of `open`.
    public func remove(named name: String, owner: String = "") throws {
        try update { transaction in try transaction.remove(named: name, owner: owner) }
    }

    /// Applies several changes as one durable write under the vault lock.
    /// Nothing is written when `body` throws or changes nothing.
    /// - Returns: What `body` returns.
    /// - Throws: what `body` throws; `.busy`; the errors of `open`; `.io`.
    public func update<T>(_ body: (inout VaultTransaction) throws -> T) throws -> T {
        try update(as: .unspecified, body)
    }

    /// Applies several changes as one durable write under the vault lock, each value written
    /// recorded as written by `writer` in its entry's history.
    /// - Returns: What `body` returns.
    /// - Throws: what `body` throws; `.busy`; the errors of `open`; `.io`.
    public func update<T>(as writer: EntryWriter, _ body: (inout VaultTransaction) throws -> T) throws -> T {
        try state.withLock { state in
            let lock = try FileLock.acquire(path: lockPath, mode: .exclusive, timeout: options.lockTimeout)
            defer { lock.release() }
            SecureFileSystem.removeStaleTemporaryFiles(in: directory, for: FileNames.vault)
            let (image, keys, kek) = try load(&state)
            var transaction = VaultTransaction(image: image, keys: keys, now: options.clock(), path: vaultPath)
            transaction.writer = writer
            let result = try body(&transaction)
            if transaction.changed {
                var next = transaction.image
                next.generation = try Self.nextGeneration(after: image.generation, path: vaultPath)
                var writeKeys = keys
                if transaction.rotationRequested {
                    writeKeys = try DataKeys(dek: SymmetricKey.generate(), vaultID: next.vaultID)
                    try Self.reseal(&next, from: keys, to: writeKeys, path: vaultPath)
                }
                try write(next, keys: writeKeys, kek: kek, state: &state)
            }
            return result
        }
    }

    /// Changes the passphrase or key **and the data key**: a new slot (new salt, new KEK) around a
    /// new DEK, and every secret re-encrypted under it, in one durable write. So the old key,
    /// even together with any earlier copy of the file (which holds the old DEK), can neither
    /// decrypt nor forge anything in the file written from now on. O(n) in the secrets (like
    /// `rotate`; see docs/BENCHMARKS.md for the cost at 10,000 entries).
    /// - Throws: `.invalidKey`, `.tampered` if a secret fails to authenticate (nothing is written),
    ///   `.busy`, and the errors of `open`.
    public func changeKey(to newKey: VaultKey) throws {
        try newKey.validate()
        // A weak new passphrase is `.invalidInput` unless `options.allowsWeakPassphrase`.
        if !options.allowsWeakPassphrase { try PassphraseStrength.check(newKey) }
        try state.withLock { state in
            let lock = try FileLock.acquire(path: lockPath, mode: .exclusive, timeout: options.lockTimeout)
            defer { lock.release() }
            var (image, oldKeys, _) = try load(&state)
            let fresh = try KeyHierarchy.newSlotParameters(for: newKey, policy: options.kdfPolicy)
            let newKEK = try KeyHierarchy.deriveKEK(key: newKey, kind: fresh.kind, parameters: fresh.parameters, salt: fresh.salt,
                                                    policy: options.kdfPolicy, path: vaultPath)
            let keys = try DataKeys(dek: SymmetricKey.generate(), vaultID: image.vaultID)
            try Self.reseal(&image, from: oldKeys, to: keys, path: vaultPath)
            image.slot = KeySlot(kind: fresh.kind, scrypt: fresh.parameters, salt: fresh.salt, wrapNonce: [], wrappedDEK: [], wrapTag: [])
            image.generation = try Self.nextGeneration(after: image.generation, path: vaultPath)
            try write(image, keys: keys, kek: newKEK, state: &state)
            state.key = newKey
            state.lastDecoded = nil
            state.kekCache = [KEKCacheKey(kind: fresh.kind.rawValue, parameters: fresh.parameters, salt: fresh.salt): newKEK]
            options.logger.info("vault key changed", metadata: ["generation": "\(image.generation)"])
        }
    }

    /// The generation a write gets: one more than `generation`, which was read from the file.
    /// - Throws: `.corrupt` at 2^64 − 1 (a file no honest writer could reach: 10^19 writes), never a trap.
    package static func nextGeneration(after generation: UInt64, path: String?) throws -> UInt64 {
        let (next, overflow) = generation.addingReportingOverflow(1)
        guard !overflow else {
            throw VaultError(.corrupt, "the vault's generation is at its largest value; no write can follow it", path: path,
                             fix: "copy the entries into a new vault")
        }
        return next
    }

    /// Makes a new data key and re-encrypts every secret under it.
    /// - Throws: `.tampered` if a secret fails to authenticate (nothing is written), `.busy`, the errors of `open`.
    public func rotate() throws {
        try state.withLock { state in
            let lock = try FileLock.acquire(path: lockPath, mode: .exclusive, timeout: options.lockTimeout)
            defer { lock.release() }
            var (image, oldKeys, kek) = try load(&state)
            let newKeys = try DataKeys(dek: SymmetricKey.generate(), vaultID: image.vaultID)
            try Self.reseal(&image, from: oldKeys, to: newKeys, path: vaultPath)
            image.generation = try Self.nextGeneration(after: image.generation, path: vaultPath)
            try write(image, keys: newKeys, kek: kek, state: &state)
            options.logger.info("vault data key rotated", metadata: ["generation": "\(image.generation)", "entries": "\(image.entries.count)"])
        }
    }

    /// The newest vault file format this build writes: every new vault's, and the one
    /// `upgradeFormat()` moves a file to.
    public static var currentFormatVersion: Int { Int(VaultFileLayout.currentMajorVersion) }

    /// The major version of the vault file's format (1, 2 or 3), as last read.
    /// - Throws: the errors of `open`.
    public func formatVersion() throws -> Int {
        try read { image, _ in Int(image.majorVersion) }
    }

    /// Rewrites the vault in the newest format this build writes (version 3: the values region,
    /// padding included, is sealed anew on every write, so a file no longer shows where the
    /// ciphertext ends; docs/FORMAT.md). A write keeps a version 2 file at version 2 so that older
    /// builds can still read it; this is the explicit step that moves it on. Keys, entries and
    /// their ciphertexts are kept; the generation counts the write. Nothing is written when the
    /// file is already current.
    /// - Returns: The version before and after.
    /// - Throws: `.busy`, and the errors of `open`.
    @discardableResult
    public func upgradeFormat() throws -> FormatUpgrade {
        try state.withLock { state in
            let lock = try FileLock.acquire(path: lockPath, mode: .exclusive, timeout: options.lockTimeout)
            defer { lock.release() }
            SecureFileSystem.removeStaleTemporaryFiles(in: directory, for: FileNames.vault)
            var (image, keys, kek) = try load(&state)
            let previous = Int(image.majorVersion)
            guard image.majorVersion < VaultFileLayout.currentMajorVersion else {
                return FormatUpgrade(previousVersion: previous, version: previous)
            }
            image.majorVersion = VaultFileLayout.currentMajorVersion
            image.minorVersion = VaultFileLayout.minorVersion
            image.generation = try Self.nextGeneration(after: image.generation, path: vaultPath)
            try write(image, keys: keys, kek: kek, state: &state)
            options.logger.info("vault format upgraded", metadata: ["from": "\(previous)", "to": "\(image.majorVersion)"])
            return FormatUpgrade(previousVersion: previous, version: Int(image.majorVersion))
        }
    }

    /// Destroys the vault: overwrites the file (and with it the wrapped key) with zeros,
    /// removes it, and forgets the keys held in memory. The lock file stays (see `FileLock`).
    /// Earlier generations in freed disk blocks are not reached: see `wipe(in:lockTimeout:)`.
    /// - Throws: `.busy`, `.io`.
    public func wipe() throws {
        try state.withLock { state in
            let lock = try FileLock.acquire(path: lockPath, mode: .exclusive, timeout: options.lockTimeout)
            defer { lock.release() }   // the lock file stays: see FileLock
            SecureFileSystem.removeStaleTemporaryFiles(in: directory, for: FileNames.vault)
            try SecureFileSystem.overwriteAndRemove(vaultPath)
            state.kekCache = [:]
            state.dataKeysCache = nil
            state.lastDecoded = nil
            options.logger.info("the vault was wiped")
        }
    }

    // MARK: Internals

    private func read<T>(fromDisk: Bool = false, _ body: (VaultImage, DataKeys) throws -> T) throws -> T {
        try state.withLock { state in
            if fromDisk { state.lastDecoded = nil }
            let (image, keys, _) = try load(&state)
            return try body(image, keys)
        }
    }

    /// Reads and decodes the current file, checking rollback and identity.
    ///
    /// A rollback record is written only after the file of its generation was renamed into
    /// place, so a record read *before* the file proves that the path held at least that
    /// generation when the file was read: an older file then is a genuine rollback. A read
    /// first checks the record after the file (it needs the file's vault id; a file unchanged
    /// since the last read is not decoded again, but its record is read: a newer one means the
    /// file was put back after a newer write); a writer committing in
    /// between leaves a newer record, so that verdict is inconclusive and is retried with the
    /// record read first.
    private func load(_ state: inout State) throws -> (VaultImage, DataKeys, SymmetricKey) {
        var vaultID: [UInt8]?
        var attempts = 0
        while true {
            attempts += 1
            let earlier = vaultID.map { id in EarlierRecord(vaultID: id, record: records.read(vaultID: id)) }
            do {
                return try loadOnce(&state, earlier: earlier)
            } catch let inconclusive as InconclusiveRollback {
                guard attempts < 3 else { throw inconclusive.error }
                state.lastDecoded = nil
                vaultID = inconclusive.vaultID
            }
        }
    }

    /// A rollback record read before the vault file (`record` is nil when there was none).
    private struct EarlierRecord {
        var vaultID: [UInt8]
        var record: RollbackRecord?
    }

    /// A file older than a rollback record that was read after it: a writer may have
    /// committed in between, so the verdict waits for a read with the record first.
    private struct InconclusiveRollback: Error {
        var vaultID: [UInt8]
        var error: VaultError
    }

    private func loadOnce(_ state: inout State, earlier: EarlierRecord?) throws -> (VaultImage, DataKeys, SymmetricKey) {
        let (image, keys, kek): (VaultImage, DataKeys, SymmetricKey)
        // A file that starts with the header last decoded is that same write (the header holds
        // a fresh random nonce and a MAC): only the header is read, not the whole file.
        let expected = state.lastDecoded.map { (prefix: Array($0.file.prefix(VaultFileLayout.longestHeaderByteCount)), size: $0.file.count) }
        let read: SecureFileSystem.PrivateFileRead
        do {
            read = try SecureFileSystem.readPrivateFile(vaultPath, maxBytes: VaultLimits.maximumFileBytes, unlessStartsWith: expected)
        } catch let error as VaultError where error.code == .notFound {
            throw VaultError.vaultNotFound(path: directory)
        }
        IOFaultInjection.afterVaultFileRead?()
        switch read {
        case .unchanged:
            guard let cached = state.lastDecoded else { preconditionFailure("unchanged is only reported against a cached file") }
            (image, keys, kek) = (cached.image, cached.keys, cached.kek)
        case let .contents(file):
            if let cached = state.lastDecoded, cached.matches(file) {
                (image, keys, kek) = (cached.image, cached.keys, cached.kek)
            } else {
                state.lastDecoded = nil
                (image, keys, kek) = try decode(file, state: &state)
                state.lastDecoded = DecodedFile(file: file, image: image, keys: keys, kek: kek)
            }
        }
        // Also for a file that is the one decoded before: another process may have written a newer
        // one (and its record) since and put this old one back, and a long-lived store (the agent)
        // must see the record as a direct open would.
        try checkRollbackRecord(of: image, earlier: earlier)
        if let known = state.vaultID, known != image.vaultID {
            throw VaultError(.tampered, "the vault file was replaced by a different vault", path: vaultPath,
                             fix: "restore the original file, or open the other vault explicitly")
        }
        guard image.generation >= state.highestGeneration else {
            throw VaultError(.rollbackDetected,
                             "the vault file is generation \(image.generation), older than generation \(state.highestGeneration) seen before",
                             path: vaultPath, fix: "an older copy was restored over the vault; restore the newest copy")
        }
        state.vaultID = image.vaultID
        state.highestGeneration = image.generation
        return (image, keys, kek)
    }

    /// Checks a freshly decoded file against this machine's record of the vault, and
    /// remembers the file when it is newer (or accepted on purpose). A record that does not
    /// authenticate under the file's state key is ignored and replaced; a v1 file (which has no
    /// state key) is checked against the record unauthenticated, since v1 files are never
    /// written any more and one that reappears after its vault moved to v2 is a restore.
    /// - Throws: `.rollbackDetected`.
    /// - Parameter earlier: the record as read before the file, when the vault id was known.
    private func checkRollbackRecord(of image: VaultImage, earlier: EarlierRecord?) throws {
        guard records.directory != nil else { return }
        let readFirst = earlier.map { $0.vaultID == image.vaultID } ?? false
        var trusted = readFirst ? earlier?.record : records.read(vaultID: image.vaultID)
        if let record = trusted, image.majorVersion >= 2, !(image.stateKey.map(record.isAuthentic) ?? false) {
            options.logger.warning("the rollback record of this vault does not authenticate; it is ignored and replaced")
            trusted = nil
        }
        if let trusted, image.generation < trusted.generation, !options.acceptRollback {
            let error = VaultError(.rollbackDetected,
                             "the vault file is generation \(image.generation), older than generation \(trusted.generation) "
                                 + "this machine saw before",
                             path: vaultPath,
                             fix: "an older copy was put back over the vault; restore the newest copy, or accept this one "
                                 + "explicitly if you restored a backup on purpose",
                             topic: .rollback)
            if readFirst { throw error }
            throw InconclusiveRollback(vaultID: image.vaultID, error: error)
        }
        guard let stateKey = image.stateKey else { return }
        let changed = trusted.map { $0.generation != image.generation || !$0.matches(image.slot) } ?? true
        if trusted == nil || (trusted.map { image.generation > $0.generation } ?? false) || (options.acceptRollback && changed) {
            records.write(try RollbackRecord(vaultID: image.vaultID, generation: image.generation, slot: image.slot, stateKey: stateKey))
        }
    }

    /// Decodes `file` with the store's key, using and filling the KEK and data-key caches.
    private func decode(_ file: [UInt8], state: inout State) throws -> (VaultImage, DataKeys, SymmetricKey) {
        let key = state.key
        let policy = options.kdfPolicy
        let acceptRaisedCost = options.acceptsRaisedKDFCost
        var kekCache = state.kekCache
        var dataKeysCache = state.dataKeysCache
        let decoded = try VaultFileCodec.decode(
            file, path: vaultPath,
            kekProvider: { slot in
                let cacheKey = KEKCacheKey(kind: slot.kind.rawValue, parameters: slot.scrypt, salt: slot.salt)
                if let cached = kekCache[cacheKey] { return cached }
                if slot.kind == .scrypt, key.slotKind == .scrypt {
                    try policy.check(slot.scrypt, path: vaultPath)
                    if !acceptRaisedCost { try policy.checkCost(slot.scrypt, path: vaultPath) }
                }
                let kek = try KeyHierarchy.deriveKEK(key: key, kind: slot.kind, parameters: slot.scrypt, salt: slot.salt,
                                                     policy: policy, path: vaultPath)
                kekCache[cacheKey] = kek
                return kek
            },
            dataKeysProvider: { dek, vaultID in
                if let cached = dataKeysCache, cached.dek == dek, cached.vaultID == vaultID { return cached.keys }
                let keys = try DataKeys(dek: dek, vaultID: vaultID)
                dataKeysCache = (dek, vaultID, keys)
                return keys
            })
        state.kekCache = kekCache
        state.dataKeysCache = dataKeysCache
        return decoded
    }

    private func write(_ image: VaultImage, keys: DataKeys, kek: SymmetricKey, state: inout State) throws {
        var image = image
        // A vault read from v1 gets its rollback-record key with its first write (as v2).
        if image.stateKey == nil { image.stateKey = try SecureRandom.bytes(count: VaultFileLayout.stateKeyByteCount) }
        let bytes = try VaultFileCodec.encode(image, keys: keys, kek: kek)
        try SecureFileSystem.writeFileAtomically(vaultPath, contents: bytes)
        if let stateKey = image.stateKey {
            records.write(try RollbackRecord(vaultID: image.vaultID, generation: image.generation, slot: image.slot, stateKey: stateKey))
        }
        state.highestGeneration = image.generation
        state.dataKeysCache = (keys.dek, image.vaultID, keys)
        options.logger.debug("vault written", metadata: ["generation": "\(image.generation)", "entries": "\(image.entries.count)"])
    }

    private func createFile() throws {
        try state.withLock { state in
            let lock = try FileLock.acquire(path: lockPath, mode: .exclusive, timeout: options.lockTimeout)
            defer { lock.release() }
            if SecureFileSystem.exists(vaultPath) {
                throw VaultError(.alreadyExists, "a vault already exists here", path: directory,
                                 fix: "open it instead, or choose another directory", topic: .vaultExists)
            }
            let fresh = try KeyHierarchy.newSlotParameters(for: state.key, policy: options.kdfPolicy)
            let kek = try KeyHierarchy.deriveKEK(key: state.key, kind: fresh.kind, parameters: fresh.parameters, salt: fresh.salt,
                                                 policy: options.kdfPolicy, path: vaultPath)
            let vaultID = try SecureRandom.bytes(count: VaultFileLayout.vaultIDByteCount)
            let keys = try DataKeys(dek: SymmetricKey.generate(), vaultID: vaultID)
            let image = VaultImage(majorVersion: VaultFileLayout.currentMajorVersion, minorVersion: VaultFileLayout.minorVersion,
                                   vaultID: vaultID,
                                   slot: KeySlot(kind: fresh.kind, scrypt: fresh.parameters, salt: fresh.salt,
                                                 wrapNonce: [], wrappedDEK: [], wrapTag: []),
                                   generation: 1, entries: [],
                                   stateKey: try SecureRandom.bytes(count: VaultFileLayout.stateKeyByteCount))
            try write(image, keys: keys, kek: kek, state: &state)
            state.vaultID = vaultID
            state.kekCache[KEKCacheKey(kind: fresh.kind.rawValue, parameters: fresh.parameters, salt: fresh.salt)] = kek
            options.logger.info("vault created")
        }
    }

    /// Re-encrypts every secret of `image` from one data key to another.
    private static func reseal(_ image: inout VaultImage, from oldKeys: DataKeys, to newKeys: DataKeys, path: String) throws {
        for position in image.entries.indices {
            let entry = image.entries[position]
            let secret = try entry.open(vaultID: image.vaultID, key: oldKeys.value, path: path)
            let sealed = try SealedEntry.seal(secret, owner: entry.owner, name: entry.name, vaultID: image.vaultID, key: newKeys.value)
            image.entries[position].nonce = sealed.nonce
            image.entries[position].ciphertext = sealed.ciphertext
            image.entries[position].tag = sealed.tag
        }
        // Kept earlier values move to the new key too (its history key is derived from the new data key).
        if var section = image.history {
            for position in section.records.indices {
                let record = section.records[position]
                section.records[position].versions = try record.versions.map { version in
                    try version.resealed(owner: record.owner, name: record.name, vaultID: image.vaultID,
                                         from: oldKeys.history, to: newKeys.history, path: path)
                }
            }
            image.history = section
        }
    }

}
