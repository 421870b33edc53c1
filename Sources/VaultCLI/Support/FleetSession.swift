import CredentialVault
import FoundationEssentials
import VaultCrypto

/// The session commands on a PostgreSQL store (`--store postgres://…`): a fleet's named session
/// (`--session NAME`) whose tokens every replica shares. There is no guest, profile or onboarding
/// here (those belong to one install); the OAuth client configuration is kept in the store itself
/// (`StoredClientConfiguration.fleetEntry`), so every replica refreshes with the same client, and a
/// refresh happens once across the fleet (`FleetSessionStore.validCredentials`).
struct FleetSession {
    let options: VaultOptions
    let name: String

    /// The `--session` name a command was given, checked against the selected store: required on
    /// PostgreSQL, refused on the vault file (whose session is the app's signed-in user).
    /// - Returns: The fleet session, or nil for the vault file.
    static func selected(_ options: VaultOptions, session: String?) throws -> FleetSession? {
        guard case .postgres = try options.storeSelection else {
            if session != nil { throw UsageError("--session names a fleet session in a PostgreSQL store; give --store postgres://… too") }
            return nil
        }
        guard let session, !session.isEmpty else {
            throw UsageError("on a PostgreSQL store, name the fleet session with --session NAME")
        }
        try EntryValidation.checkOwner(session)
        return FleetSession(options: options, name: session)
    }

    /// Saves a token response as the session's tokens.
    func signIn(_ credentials: Credentials) async throws {
        try await options.withFleetSessions { try await $0.saveCredentials(credentials, session: name) }
    }

    /// Credentials valid for `minTTL` plus the leeway (capped at half the token's life, as the
    /// file vault's session does): as stored when they are, else refreshed with the stored client,
    /// once across the fleet; a `client_credentials` client fetches a new token when there is none
    /// or it expired.
    func token(minTTL: Int64, leeway: Int64) async throws -> Credentials {
        try await options.withFleetSessions { store in
            let existing: Credentials?
            do {
                existing = try await store.storedCredentials(session: name)
            } catch let error as VaultError where error.code == .notSignedIn {
                existing = nil
            }
            let minimum = Self.minimum(minTTL: minTTL, leeway: leeway, for: existing)
            guard let stored = try await StoredClientConfiguration.load(from: store) else {
                guard let current = existing else { throw VaultError(.notSignedIn, "the session has no tokens", fix: "sign it in first") }
                guard Self.isValid(current, for: minimum) else {
                    throw VaultError(.sessionExpired, "the session's access token is expired (or expires within --min-ttl), and no OAuth client is stored to refresh it",
                                     fix: "store one with 'vault client --store …', or sign the session in again")
                }
                return current
            }
            let session = name
            return try await OAuthSupport.using(try await stored.client(secretFrom: store)) { client in
                if stored.grant == "client_credentials" {
                    do {
                        return try await store.validCredentials(session: session, minTTL: minimum) { _ in try await client.clientCredentials() }
                    } catch let error as VaultError where error.code == .notSignedIn || error.code == .sessionExpired {
                        let fresh = try await client.clientCredentials()
                        try await store.saveCredentials(fresh, session: session)
                        return fresh
                    }
                }
                return try await store.validCredentials(session: session, minTTL: minimum) { try await client.refresh($0) }
            }
        }
    }

    /// Refreshes now with the stored client, whatever the token's expiry.
    func refreshNow() async throws -> Credentials {
        try await options.withFleetSessions { store in
            guard let stored = try await StoredClientConfiguration.load(from: store) else { throw Self.noClient }
            let session = name
            return try await OAuthSupport.using(try await stored.client(secretFrom: store)) { client in
                // Any expiry is "too soon" for a minimum this long: the check always refreshes.
                try await store.validCredentials(session: session, minTTL: .seconds(Int64(Int32.max))) { try await client.refresh($0) }
            }
        }
    }

    /// Removes the session's tokens, then revokes them with the stored client (a failed revocation
    /// is reported, never undoes the removal). - Returns: whether there were tokens.
    func signOut() async throws -> Bool {
        try await options.withFleetSessions { store in
            guard let removed = try await store.removeCredentials(session: name) else { return false }
            if let stored = try? await StoredClientConfiguration.load(from: store) {
                do {
                    let report = try await OAuthSupport.using(try await stored.client(secretFrom: store)) { await $0.revokeAll(removed) }
                    ErrorReport.note(report.succeeded ? "Server: \(report.summary)." : "warning: \(report.summary)")
                } catch {
                    ErrorReport.note("warning: the tokens were not revoked at the server: \(TerminalText.escaped("\(error)"))")
                }
            }
            return true
        }
    }

    /// The session as `vault status` shows it: signed in, expired, or (no tokens) guest.
    func state(minTTL: Int64, leeway: Int64 = 60) async throws -> SessionState {
        try await options.withFleetSessions { store in
            let user = User(id: name, onboardingComplete: true)
            let credentials: Credentials
            do {
                credentials = try await store.storedCredentials(session: name)
            } catch let error as VaultError where error.code == .notSignedIn {
                return .guest(anonymousID: "")
            }
            guard Self.isValid(credentials, for: Self.minimum(minTTL: minTTL, leeway: leeway, for: credentials)) else {
                return .expired(user, hasRefreshToken: credentials.refreshToken != nil, expiresAt: credentials.expiresAt)
            }
            return .signedIn(user, credentials)
        }
    }

    /// Stores the client configuration (and its secret) in the fleet's store.
    func storeClient(_ configuration: StoredClientConfiguration, secret: SecureBytes?) async throws {
        try await options.withFleetSessions { try await configuration.save(to: $0, secret: secret) }
    }

    /// Forgets the client configuration and secret in the fleet's store.
    static func removeClient(_ options: VaultOptions) async throws {
        try await options.withFleetSessions { store in
            for name in [StoredClientConfiguration.fleetEntry, StoredClientConfiguration.secretEntry] {
                do {
                    try await store.removeEntry(named: name, owner: "")
                } catch let error as VaultError where error.code == .notFound {
                    continue
                }
            }
        }
    }

    /// `minTTL` plus the leeway, the leeway capped at half the life of `credentials`' token (a
    /// 20 s token with a 60 s leeway would otherwise never count as valid).
    static func minimum(minTTL: Int64, leeway: Int64, for credentials: Credentials?) -> Duration {
        var effective = Double(leeway)
        if let expiresAt = credentials?.expiresAt, let issuedAt = credentials?.issuedAt {
            effective = min(effective, max(0, expiresAt.timeIntervalSince(issuedAt)) / 2)
        }
        return .seconds(Double(minTTL) + effective)
    }

    static func isValid(_ credentials: Credentials, for minimum: Duration, now: Date = Date()) -> Bool {
        guard let expiresAt = credentials.expiresAt else { return true }
        let seconds = Double(minimum.components.seconds) + Double(minimum.components.attoseconds) / 1e18
        return expiresAt.timeIntervalSince(now) > seconds
    }

    static let noClient = VaultError(.notFound, "no OAuth client is stored in this PostgreSQL store",
                                     fix: "store one with 'vault client --store …'")
}
