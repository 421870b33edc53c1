#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import FoundationEssentials
import Synchronization
import VaultCrypto

/// What `vault agent` does with a request: holds the unlocked vaults and their timeouts, checks
/// the reserved names and the caller's rules (`AgentAccessPolicy`), and answers. No sockets: the
/// accept loop, its threads and the caller's identification are the command's (`AgentServer`).
///
/// The opened stores are `SecretStore`s: each request re-reads the vault file when another process
/// changed it (its generation check), and a key that no longer opens it (a `passwd` meanwhile)
/// makes the agent forget that vault and answer "locked", never write with a stale key.
package final class AgentRequestHandler: Sendable {
    /// One unlocked vault.
    private struct UnlockedVault {
        let store: SecretStore
        /// Its audit log, or why it cannot be written (entry requests are then refused); nil without auditing.
        let audit: Result<AuditLog, VaultError>?
        let unlockedAt: Date
        var lastUsed: ContinuousClock.Instant
        let unlockedInstant: ContinuousClock.Instant
    }

    /// The socket the agent listens on, for its status.
    package let socketPath: String
    /// A vault's key is forgotten after this long without use.
    package let idleTimeout: Duration
    /// A vault's key is forgotten this long after it was unlocked, at the latest.
    package let maximumLifetime: Duration
    private let vaults = Mutex<[String: UnlockedVault]>([:])
    /// What the agent serves on the session bus, for its status.
    private let servedSecretService = Mutex<VaultAgentClient.Status.SecretService?>(nil)
    private let log: @Sendable (String) -> Void
    private let open: @Sendable (String, VaultKey) throws -> SecretStore
    /// Where the audit logs go (nil: no audit trail).
    private let audit: AgentAudit?
    private let clock: @Sendable () -> Date

    /// A handler holding no vault.
    /// - Parameters:
    ///   - socketPath: the agent's socket, for its status.
    ///   - idleTimeout: how long an unused key is kept.
    ///   - maximumLifetime: how long a key is kept at most.
    ///   - log: where events go (times, directories, refusals; never a secret).
    ///   - open: opens a vault with a key (`SecretStore.open`; tests pass their options).
    ///   - audit: where each vault's audit log goes; nil keeps none.
    ///   - clock: the time of audit records.
    package init(socketPath: String, idleTimeout: Duration, maximumLifetime: Duration, log: @escaping @Sendable (String) -> Void,
                 open: @escaping @Sendable (String, VaultKey) throws -> SecretStore = { try SecretStore.open(in: $0, key: $1) },
                 audit: AgentAudit? = nil, clock: @escaping @Sendable () -> Date = { Date() }) {
        self.socketPath = socketPath
        self.idleTimeout = idleTimeout
        self.maximumLifetime = maximumLifetime
        self.log = log
        self.open = open
        self.audit = audit
        self.clock = clock
    }

    /// The answer to one message: decoded, answered, encoded. A malformed request is answered with
    /// its `.invalidInput` error.
    /// - Parameters:
    ///   - message: the request as it arrived.
    ///   - requester: who sent it (history writer tags); nil when not known.
    ///   - access: the rules for this caller, asked only for an entry request (get, list, add, rm);
    ///     nil when there are none; throws to refuse the request as a whole.
    /// - Returns: the answer to send.
    package func answer(_ message: AgentMessage, requester: AgentRequester? = nil,
                        access: (AgentOperation) throws -> (any AgentAccessPolicy)?) -> AgentMessage {
        let response: AgentResponse
        do {
            let (request, bySession) = try AgentRequest.decode(message)
            let policy = request.operation.concernsEntries ? try access(request.operation) : nil
            response = answer(request, bySession: bySession, policy: policy, requester: requester)
        } catch {
            response = .refused(Self.answerable(error))
        }
        return response.message
    }

    /// The answer to one request.
    /// - Parameters:
    ///   - request: what is asked.
    ///   - bySession: whether the request is marked as the session's own (its reserved entries).
    ///   - policy: the caller's rules, nil when there are none.
    ///   - requester: who sent it (history writer tags); nil when not known.
    /// - Returns: the answer; a failure is `.refused` with its error.
    package func answer(_ request: AgentRequest, bySession: Bool = false, policy: (any AgentAccessPolicy)? = nil,
                        requester: AgentRequester? = nil) -> AgentResponse {
        let requester = requester ?? policy?.requester
        let access = Access(operation: request.operation, bySession: bySession, policy: policy,
                            writer: .agent(caller: requester?.summary ?? "a caller the agent was not told"), requester: requester)
        do {
            switch request {
            case .status: return status()
            case let .unlock(directory, key): return try unlock(directory, key: key)
            case .lock: return lock()
            case let .list(directory, owner): return try list(directory, owner: owner, access: access)
            case let .get(directory, name, owner): return try get(directory, name: name, owner: owner, access: access)
            case let .getSeveral(directory, names, owner): return try get(directory, names: names, owner: owner, access: access)
            case let .add(directory, entries, replace): return try add(directory, entries: entries, replace: replace, access: access)
            case let .remove(directory, name, owner): return try remove(directory, name: name, owner: owner, access: access)
            case let .removeSeveral(directory, names, owner, rotate):
                return try remove(directory, names: names, owner: owner, rotatingDataKey: rotate, access: access)
            }
        } catch {
            return .refused(Self.answerable(error))
        }
    }

    // MARK: One method per request

    private func status() -> AgentResponse {
        let now = ContinuousClock.now, wallNow = Date()
        let listed = vaults.withLock { vaults in
            vaults.sorted { $0.key < $1.key }.map { directory, vault in
                let expires = min(vault.lastUsed + idleTimeout, vault.unlockedInstant + maximumLifetime)
                return VaultAgentClient.Status.UnlockedVault(directory: directory, unlockedAt: vault.unlockedAt,
                                                             expiresAt: wallNow.addingTimeInterval(SessionManager.seconds(expires - now)))
            }
        }
        return .status(VaultAgentClient.Status(pid: getpid(), socket: socketPath, vaults: listed, secretService: servedSecretService.withLock { $0 }),
                       failedMemoryLocks: SecureMemory.failedLocks)
    }

    /// Records what the agent serves on the session bus (nil once it stopped), for its status.
    package func announceSecretService(_ served: VaultAgentClient.Status.SecretService?) {
        servedSecretService.withLock { $0 = served }
    }

    private func unlock(_ directory: String, key: VaultKey) throws -> AgentResponse {
        let store = try open(directory, key)
        let now = ContinuousClock.now
        let auditLog = audit.map { audit in
            Result { () throws(VaultError) -> AuditLog in
                do { return try audit.log(for: store) } catch let error as VaultError { throw error } catch {
                    throw VaultError(.io, "the audit log's key could not be derived", path: directory)
                }
            }
        }
        vaults.withLock {
            $0[directory] = UnlockedVault(store: store, audit: auditLog, unlockedAt: Date(), lastUsed: now, unlockedInstant: now)
        }
        log("unlocked \(directory)")
        return .done
    }

    private func lock() -> AgentResponse {
        lockAll()
        return .done
    }

    private func list(_ directory: String, owner: String?, access: Access) throws -> AgentResponse {
        try authorize(directory, access, [(nil, owner)])
        let entries = try withVault(directory) { try $0.list(owner: owner) }
        return .metadata(entries.filter { access.lists(($0.name, $0.owner), attributes: $0.attributes) })
    }

    private func get(_ directory: String, name: String, owner: String, access: Access) throws -> AgentResponse {
        try authorize(directory, access, [(name, owner)])
        return .entry(try withVault(directory) { try $0.entry(named: name, owner: owner) })
    }

    /// Several entries of one owner read in one snapshot (a session's tokens); missing ones are left out.
    private func get(_ directory: String, names: [String], owner: String, access: Access) throws -> AgentResponse {
        try authorize(directory, access, names.map { ($0, owner) })
        let entries = try withVault(directory) { store in
            try store.snapshot { view in
                try names.compactMap { name -> VaultEntry? in
                    guard let metadata = view.metadata(named: name, owner: owner) else { return nil }
                    return VaultEntry(metadata: metadata, secret: try view.secret(named: name, owner: owner))
                }
            }
        }
        return .entries(entries)
    }

    private func add(_ directory: String, entries: [NewEntry], replace: Bool, access: Access) throws -> AgentResponse {
        try authorize(directory, access, entries.map { ($0.name, $0.owner) },
                      newAttributes: Dictionary(entries.map { (Self.attributesKey($0.name, $0.owner), $0.attributes) }) { _, last in last })
        let stored = try withVault(directory) { store in
            try store.update(as: access.writer) { transaction in try entries.map { try transaction.put($0, replace: replace) } }
        }
        return .metadata(stored)
    }

    private func remove(_ directory: String, name: String, owner: String, access: Access) throws -> AgentResponse {
        try authorize(directory, access, [(name, owner)])
        try withVault(directory) { store in try store.update(as: access.writer) { try $0.remove(named: name, owner: owner) } }
        return .done
    }

    /// Several entries of one owner in one transaction (a session that ends), optionally with a new data key.
    private func remove(_ directory: String, names: [String], owner: String, rotatingDataKey: Bool, access: Access) throws -> AgentResponse {
        try authorize(directory, access, names.map { ($0, owner) })
        try withVault(directory) { store in
            try store.update(as: access.writer) { transaction in
                for name in names where transaction.metadata(named: name, owner: owner) != nil {
                    try transaction.remove(named: name, owner: owner)
                }
                if rotatingDataKey { transaction.rotateDataKey() }
            }
        }
        return .done
    }

    // MARK: The audit trail

    /// Checks each entry of a request (reserved names, then the caller's rules) and records each
    /// decision in the vault's audit log before anything is done: a refusal with its rule, else
    /// "allowed". A record that cannot be written refuses the request (fail closed). A vault the
    /// agent does not hold has no log key: its request fails as locked anyway.
    /// - Parameter entries: (name, owner) per entry; a nil name is a list of `owner` (nil: every owner).
    /// - Parameter newAttributes: for add, the new entries' attributes (`attributesKey`); else the
    ///   stored entries' are looked up when there are rules.
    private func authorize(_ directory: String, _ access: Access, _ entries: [(name: String?, owner: String?)],
                           newAttributes: [String: [String: String]]? = nil) throws {
        let attributes = access.policy == nil ? [:] : newAttributes ?? storedAttributes(directory, entries)
        let log: Result<AuditLog, VaultError>?? = vaults.withLock { vaults in vaults[directory].map(\.audit) }
        func record(_ entry: (name: String?, owner: String?), allowed: Bool, rule: String?) throws {
            guard case let .some(.some(result)) = log else { return }
            let auditLog: AuditLog
            switch result {
            case let .success(opened): auditLog = opened
            case let .failure(error): throw Self.auditFailure(error, directory: directory)
            }
            do {
                try auditLog.append(AuditEvent(time: clock(), operation: access.operation.rawValue, entry: entry.name, owner: entry.owner,
                                               requester: access.requester, allowed: allowed, rule: rule))
            } catch {
                throw Self.auditFailure((error as? VaultError) ?? VaultError(.io, "the audit log could not be written"), directory: directory)
            }
        }
        for entry in entries {
            guard let name = entry.name else { continue }
            do {
                try access.check((name, entry.owner ?? ""), attributes: attributes[Self.attributesKey(name, entry.owner ?? "")])
            } catch let refusal as VaultError {
                // Refused either way; a refusal that cannot be recorded is still refused (with the audit's error).
                try record(entry, allowed: false, rule: refusal.message)
                throw refusal
            }
        }
        for entry in entries { try record(entry, allowed: true, rule: nil) }
    }

    /// The error of a request refused because its audit record could not be written.
    private static func auditFailure(_ error: VaultError, directory: String) -> VaultError {
        VaultError(error.code == .insecurePermissions ? .insecurePermissions : .io,
                   "the agent keeps an audit log of this vault and could not write to it (\(error.message)); it refuses entry requests it cannot record",
                   path: error.path ?? directory, fix: error.fix ?? "free space on the disk of the audit log, or fix its folder's permissions")
    }

    // MARK: The vaults held

    /// Runs `body` on the unlocked vault in `directory`; a key that no longer opens it locks it.
    private func withVault<T>(_ directory: String, _ body: (SecretStore) throws -> T) throws -> T {
        let store: SecretStore? = vaults.withLock { vaults in
            guard var vault = vaults[directory] else { return nil }
            vault.lastUsed = .now
            vaults[directory] = vault
            return vault.store
        }
        guard let store else {
            throw VaultError(.vaultLocked, "the agent does not hold this vault unlocked", path: directory)
        }
        do {
            return try body(store)
        } catch let error as VaultError where error.code == .wrongKey || error.code == .suspiciousKDFParameters {
            vaults.withLock { vaults in
                if vaults[directory]?.store === store { vaults[directory] = nil }
            }
            log("forgot \(directory): its key no longer opens it")
            throw VaultError(.vaultLocked, "the vault's key changed since it was unlocked; the agent forgot it", path: directory)
        }
    }

    /// Forgets every key (the stores go, and with them their zeroising key buffers).
    package func lockAll() {
        let forgotten = vaults.withLock { vaults -> Int in
            let count = vaults.count
            vaults.removeAll()
            return count
        }
        if forgotten > 0 { log("locked: forgot \(forgotten) vault key\(forgotten == 1 ? "" : "s")") }
    }

    /// Forgets the key of one vault only (the Secret Service's Lock of the vault it serves); the
    /// other vaults the agent holds stay unlocked.
    /// - Returns: whether the agent held that vault.
    @discardableResult
    package func lock(directory: String) -> Bool {
        let forgotten = vaults.withLock { $0.removeValue(forKey: directory) != nil }
        if forgotten { log("locked \(directory)") }
        return forgotten
    }

    /// Forgets the keys unused for `idleTimeout`, or unlocked `maximumLifetime` ago.
    /// - Parameter now: the time to judge by (the accept loop's clock; tests pass a later one).
    package func forgetExpiredKeys(at now: ContinuousClock.Instant = .now) {
        let expired: [String] = vaults.withLock { vaults in
            let expired = vaults.filter { now - $0.value.lastUsed >= idleTimeout || now - $0.value.unlockedInstant >= maximumLifetime }
                .map(\.key)
            for directory in expired { vaults[directory] = nil }
            return expired
        }
        for directory in expired { log("forgot \(directory): timed out") }
    }

    // MARK: Checks and errors

    /// The checks of one request's entries: the session's reserved names, then the caller's rules.
    /// The stored attributes of the named entries that exist, by `attributesKey`, for rules on
    /// attributes; none when the vault is not held (the request then fails as locked).
    private func storedAttributes(_ directory: String, _ entries: [(name: String?, owner: String?)]) -> [String: [String: String]] {
        let named = entries.compactMap { entry in entry.name.map { (name: $0, owner: entry.owner ?? "") } }
        guard !named.isEmpty else { return [:] }
        let found = try? withVault(directory) { store in
            try store.snapshot { view in
                named.compactMap { entry in
                    view.metadata(named: entry.name, owner: entry.owner).map { (Self.attributesKey(entry.name, entry.owner), $0.attributes) }
                }
            }
        }
        return Dictionary(found ?? []) { first, _ in first }
    }

    /// One entry's key in the attribute maps (a name and an owner hold no NUL).
    private static func attributesKey(_ name: String, _ owner: String) -> String {
        owner + "\u{0}" + name
    }

    private struct Access {
        let operation: AgentOperation
        let bySession: Bool
        let policy: (any AgentAccessPolicy)?
        /// Who writes, for the history of what this request writes.
        let writer: EntryWriter
        /// Who asked, for the audit log.
        let requester: AgentRequester?

        func check(_ entry: (name: String, owner: String), attributes: [String: String]?) throws {
            if !bySession {
                let use: ReservedEntryNames.Use = switch operation {
                case .add: .store
                case .remove: .remove
                default: .read
                }
                try ReservedEntryNames.check(name: entry.name, owner: entry.owner, for: use)
            }
            try policy?.check(operation, entry: entry, attributes: attributes)
        }

        func lists(_ entry: (name: String, owner: String), attributes: [String: String]) -> Bool {
            policy?.lists(entry, attributes: attributes) ?? true
        }
    }

    /// The error an answer carries: a `VaultError` as it is, anything else as a generic failure.
    private static func answerable(_ error: any Error) -> VaultError {
        (error as? VaultError) ?? VaultError(.io, "the agent failed to answer")
    }
}
