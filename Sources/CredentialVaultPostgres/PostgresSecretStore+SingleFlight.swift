import CredentialVault
import Synchronization
import FoundationEssentials
import NIOCore
import PostgresNIO
import VaultCrypto

extension PostgresSecretStore {
    /// Entry names of a session's tokens; the session id is the entries' owner.
    public enum SessionEntryNames {
        /// The access token (kind `.accessToken`, with its expiry; its label is the token type).
        public static let accessToken = "oauth/access_token"
        /// The refresh token (kind `.refreshToken`).
        public static let refreshToken = "oauth/refresh_token"
    }

    /// Saves a session's tokens in one transaction (a response without a refresh token keeps the old one).
    ///
    /// The transaction takes the session's advisory lock first, as a refresh does: a sign-in that
    /// arrives while a replica refreshes waits for that refresh and then replaces its pair,
    /// instead of being overwritten by it.
    public func saveCredentials(_ credentials: Credentials, session: String) async throws {
        let client = self.client
        let logger = options.logger
        let lockKey = try sessionLockKey(session)
        let changes = Self.changes(saving: credentials, session: session)
        try Self.validate(changes)
        let newState = try await guarding {
            try await client.withTransaction(logger: logger) { connection in
                try await connection.queryIfOpen("SELECT pg_advisory_xact_lock(\(lockKey))", logger: logger)
                return try await self.apply(changes, on: connection).0
            }
        }
        recordCommitted(newState)
    }

    /// Credentials of `session` whose access token is valid for at least `minTTL`, refreshed
    /// through `refresher` when it is not, with **one refresh across every replica**: the check,
    /// the refresh and the save run inside one transaction holding a transaction-scoped advisory
    /// lock (`pg_advisory_xact_lock`) keyed by the session's lookup hash. Replicas that arrive
    /// meanwhile wait on the lock and then find the saved, fresh pair.
    ///
    /// The refresh happens while the lock is held, so a rotating server never sees the same refresh
    /// token twice from this fleet. If the refresher throws, nothing is written and the error is
    /// rethrown (an `invalid_grant` is the caller's to handle, as with the file vault).
    /// - Throws: `.notSignedIn` when the session has no tokens; `.sessionExpired` when the access
    ///   token needs a refresh and there is no refresh token; the refresher's error; `.serverUnavailable`.
    public func validCredentials(session: String, minTTL: Duration = .zero,
                                 refresher: @escaping @Sendable (SecureBytes) async throws -> Credentials) async throws -> Credentials {
        let minimumSeconds = Double(minTTL.components.seconds) + Double(minTTL.components.attoseconds) / 1e18
        let clock = options.clock
        return try await validCredentials(session: session, isValid: { credentials in
            guard let expiresAt = credentials.expiresAt else { return true }
            return expiresAt.timeIntervalSince(clock()) >= minimumSeconds
        }, refresher: refresher)
    }

    /// `validCredentials(session:minTTL:refresher:)` with the caller's expiry rule: a
    /// `SessionManager` over this store passes its own (leeway, injected clock).
    package func validCredentials(session: String, isValid: @escaping @Sendable (Credentials) -> Bool,
                                  refresher: @escaping @Sendable (SecureBytes) async throws -> Credentials) async throws -> Credentials {
        let client = self.client
        let logger = options.logger
        let lockKey = try sessionLockKey(session)
        // The refresh itself may take as long as the refresher's own retries: the whole
        // transaction gets the operation timeout plus a generous allowance for it.
        // The refresher's own error (an OAuth error, `invalid_grant`) reaches the caller as it was
        // thrown, not as a database failure.
        let refresherFailure = Mutex<(any Error)?>(nil)
        let outcome: (Credentials, PostgresCommitted?)
        do {
            // Through the store's guarding: a standby answering the token read has the primary sought again.
            outcome = try await guarding(timeout: options.operationTimeout * 7) {
                try await client.withTransaction(logger: logger) { connection in
                    try await connection.queryIfOpen("SELECT pg_advisory_xact_lock(\(lockKey))", logger: logger)
                    let current = try await self.readCredentials(session: session, on: connection)
                    if !isValid(current) {
                        guard let refreshToken = current.refreshToken else {
                            throw VaultError(.sessionExpired, "the access token has expired and there is no refresh token")
                        }
                        // The rows the save will write are locked before the grant: a writer holding them
                        // (a long import) delays this transaction before the refresh, never between the
                        // grant and its save, where a timeout would lose the new pair.
                        try await self.lockSessionRows(session: session, on: connection)
                        var fresh: Credentials
                        do {
                            fresh = try await refresher(refreshToken)
                        } catch {
                            refresherFailure.withLock { $0 = error }
                            throw error
                        }
                        if fresh.refreshToken == nil { fresh.refreshToken = refreshToken }
                        let (committed, _) = try await self.apply(Self.changes(saving: fresh, session: session), on: connection)
                        return (fresh, Optional(committed))
                    }
                    return (current, PostgresCommitted?.none)
                }
            }
        } catch {
            if let failure = refresherFailure.withLock({ $0 }) { throw failure }
            throw error
        }
        let (credentials, newState) = outcome
        if let newState { recordCommitted(newState) }
        return credentials
    }

    static func changes(saving credentials: Credentials, session: String) -> [Change] {
        var changes: [Change] = [.put(NewEntry(name: SessionEntryNames.accessToken, owner: session, secret: credentials.accessToken,
                                               kind: .accessToken, label: credentials.tokenType, expiresAt: credentials.expiresAt,
                                               transferable: false), replacing: true)]
        if let refreshToken = credentials.refreshToken {
            changes.append(.put(NewEntry(name: SessionEntryNames.refreshToken, owner: session, secret: refreshToken,
                                         kind: .refreshToken, transferable: false), replacing: true))
        }
        return changes
    }

    /// Reads a session's pair inside a transaction, checked like every other read.
    ///
    /// The state row and both token rows come in one statement, so from one snapshot: the
    /// transaction is READ COMMITTED, where each statement sees what was committed when it
    /// started, and a replica's save committed between two statements would pair a state with
    /// rows it does not list (a consistent store refused as tampered, or one save's access token
    /// with another's refresh token).
    func readCredentials(session: String, on connection: PostgresConnection) async throws -> Credentials {
        // The rows are checked against the sealed state, as `entry(named:)` does: an older copy of
        // the refresh token put back, or a listed row deleted, is refused before any token is used.
        let floor = generation
        let accessLookup = try PostgresRowCodec.lookup(owner: session, name: SessionEntryNames.accessToken, keys: keys)
        let refreshLookup = try PostgresRowCodec.lookup(owner: session, name: SessionEntryNames.refreshToken, keys: keys)
        if case let .buckets(bits) = layout.withLock({ $0 }) {
            // Version 3: both rows with their bucket rows, one statement; a save locks both buckets (ascending).
            let (access, refresh) = try await readBucketedCredentialRows(accessLookup: accessLookup, refreshLookup: refreshLookup,
                                                                         bits: bits, on: connection)
            return try Self.credentials(access: access, refresh: refresh)
        }
        let vaultID = ByteBuffer(bytes: self.vaultID)
        var answer: (state: [UInt8], access: (Int64, [UInt8])?, refresh: (Int64, [UInt8])?)?
        for try await (state, accessGeneration, accessSealed, refreshGeneration, refreshSealed) in try await connection.queryIfOpen("""
            SELECT s.state, a.row_generation, a.sealed, r.row_generation, r.sealed FROM vault_stores s
            LEFT JOIN vault_entries a ON a.vault_id = s.vault_id AND a.lookup = \(ByteBuffer(bytes: accessLookup))
            LEFT JOIN vault_entries r ON r.vault_id = s.vault_id AND r.lookup = \(ByteBuffer(bytes: refreshLookup))
            WHERE s.vault_id = \(vaultID)
            """, logger: options.logger).decode((ByteBuffer, Int64?, ByteBuffer?, Int64?, ByteBuffer?).self) {
            func row(_ generation: Int64?, _ sealed: ByteBuffer?) -> (Int64, [UInt8])? {
                guard let generation, let sealed else { return nil }
                return (generation, Array(buffer: sealed))
            }
            answer = (Array(buffer: state), row(accessGeneration, accessSealed), row(refreshGeneration, refreshSealed))
        }
        guard let answer else { throw VaultError.tampered(region: "state row (missing)") }
        if PostgresStateV3.isVersion3(answer.state) {
            try adoptBucketLayout(answer.state)
            return try await readCredentials(session: session, on: connection)
        }
        let state = try observe(PostgresVaultState.open(answer.state, vaultID: self.vaultID, storeName: storeName, keys: keys), seenBefore: floor)
        let access = try openSessionRow(answer.access, lookup: accessLookup, state: state)
        let refresh = try openSessionRow(answer.refresh, lookup: refreshLookup, state: state)
        return try Self.credentials(access: access, refresh: refresh)
    }

    /// A session's credentials from its two token rows.
    /// - Throws: `.notSignedIn` when there is no access token.
    private static func credentials(access: VaultEntry?, refresh: VaultEntry?) throws -> Credentials {
        guard let access else {
            throw VaultError(.notSignedIn, "no tokens are stored for this session")
        }
        return Credentials(accessToken: access.secret, refreshToken: refresh?.secret,
                           tokenType: access.metadata.label ?? "Bearer", expiresAt: access.metadata.expiresAt,
                           issuedAt: access.metadata.updatedAt)
    }

    /// One token row of `readCredentials`, checked against the state read with it: a row the state
    /// lists but the database lacks, one of a generation the state does not list for it, or one
    /// that does not open, is tampered.
    private func openSessionRow(_ row: (rowGeneration: Int64, sealed: [UInt8])?, lookup: [UInt8],
                                state: PostgresVaultState) throws -> VaultEntry? {
        let expected = state.rowGenerations?[lookup]
        guard let row else {
            if expected != nil { throw VaultError.tampered(region: "entry row (deleted)") }
            return nil
        }
        guard row.rowGeneration >= 1, UInt64(row.rowGeneration) <= state.generation,
              state.rowGenerations == nil || expected == UInt64(row.rowGeneration) else {
            throw VaultError.tampered(region: "entry row (generation)")
        }
        return try PostgresRowCodec.open(row.sealed, vaultID: vaultID, lookup: lookup,
                                         rowGeneration: UInt64(row.rowGeneration), keys: keys)
    }

    /// The key of `session`'s advisory lock, taken by every transaction that reads the session's
    /// tokens to write them (refresh, sign-in, sign-out).
    func sessionLockKey(_ session: String) throws -> Int64 {
        try Self.advisoryLockKey(try PostgresRowCodec.lookup(owner: session, name: SessionEntryNames.accessToken, keys: keys))
    }

    /// A 64-bit advisory-lock key from a lookup hash (its first 8 bytes): the database sees a
    /// number that reveals neither the session nor the name.
    static func advisoryLockKey(_ lookup: [UInt8]) throws -> Int64 {
        var value: UInt64 = 0
        for byte in lookup.prefix(8) { value = (value << 8) | UInt64(byte) }
        return Int64(bitPattern: value)
    }
}

extension PostgresSecretStore {
    /// A session's tokens as stored, without refreshing them.
    /// - Throws: `.notSignedIn` when the session has no tokens; `.tampered`; `.serverUnavailable`.
    public func storedCredentials(session: String) async throws -> Credentials {
        let client = self.client
        let logger = options.logger
        return try await guarding {
            try await client.withTransaction(logger: logger) { connection in
                try await self.readCredentials(session: session, on: connection)
            }
        }
    }

    /// Removes a session's tokens in one transaction, under the session's advisory lock: a sign-out
    /// that arrives while a replica refreshes waits for that refresh, then removes (and returns,
    /// for revocation) the pair it saved; the refresh can no longer sign the session back in.
    /// - Returns: What was removed (for revocation at the server), or nil when the session had none.
    public func removeCredentials(session: String) async throws -> Credentials? {
        let client = self.client
        let logger = options.logger
        let lockKey = try sessionLockKey(session)
        let (removed, newState) = try await guarding {
            try await client.withTransaction(logger: logger) { connection -> (Credentials?, PostgresCommitted?) in
                try await connection.queryIfOpen("SELECT pg_advisory_xact_lock(\(lockKey))", logger: logger)
                let current: Credentials
                do {
                    current = try await self.readCredentials(session: session, on: connection)
                } catch let error as VaultError where error.code == .notSignedIn {
                    return (nil, nil)
                }
                var changes: [Change] = [.remove(name: SessionEntryNames.accessToken, owner: session)]
                if current.refreshToken != nil { changes.append(.remove(name: SessionEntryNames.refreshToken, owner: session)) }
                let (state, _) = try await self.apply(changes, on: connection)
                return (current, state)
            }
        }
        if let newState { recordCommitted(newState) }
        return removed
    }
}

/// Its sessions are fleet sessions: `SessionManager(fleet:session:)` works over it.
extension PostgresSecretStore: FleetSessionStore {}
