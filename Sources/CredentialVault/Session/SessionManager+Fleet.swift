import FoundationEssentials
import VaultCrypto

/// A session shared by a fleet: the same `SessionManager`, the same rules (the leeway with the
/// injected clock, the `client_credentials` grant, single-flight refresh), over a store every
/// replica shares (`FleetSessionStore`: `PostgresSecretStore`). The session is a name; its user is
/// `User(id: name)`. A fleet has no guest, profile, onboarding, items or settings: those calls
/// throw `.unsupportedOperation` (docs/SESSIONS.md, "Fleet sessions").
extension SessionManager {
    /// A fleet session: the store and the session's name.
    struct FleetBinding: Sendable {
        let store: any FleetSessionStore
        let name: String
    }

    /// Creates a session over the fleet session `name` in `store` (PostgreSQL, shared by every replica).
    /// - Parameters:
    ///   - store: The open store.
    ///   - name: The session's name (an owner name: `EntryValidation.checkOwner`).
    ///   - configuration: Leeway and clock; the store keeps its own timeouts.
    package init(fleet store: any FleetSessionStore, session name: String, configuration: SessionConfiguration = SessionConfiguration()) {
        self.init(directory: "", key: nil, store: nil, fleet: FleetBinding(store: store, name: name), agent: nil, configuration: configuration)
    }

    /// Throws `.unsupportedOperation` for a fleet session, which has none of what `feature` needs.
    func requireDeviceSession(_ feature: String) throws {
        guard fleet != nil else { return }
        throw VaultError(.unsupportedOperation, "a fleet session has no \(feature): only the session's tokens are shared",
                         fix: "use a session over a vault file for guest mode, onboarding, items and settings")
    }

    /// The state of the fleet session: signed in (onboarding does not apply), expired, or
    /// guest when it has no tokens. Never throws: failures are `.unavailable`.
    func fleetState(_ fleet: FleetBinding, minTTL: Duration) async -> SessionState {
        let user = User(id: fleet.name, onboardingComplete: true)
        do {
            let credentials: Credentials
            do {
                credentials = try await fleet.store.storedCredentials(session: fleet.name)
            } catch let error as VaultError where error.code == .notSignedIn {
                return .guest(anonymousID: "")
            }
            guard isValid(credentials, minTTL: minTTL) else {
                return .expired(user, hasRefreshToken: credentials.refreshToken != nil, expiresAt: credentials.expiresAt)
            }
            return .signedIn(user, credentials)
        } catch {
            return unavailable(error)
        }
    }

    /// Saves the tokens as the fleet session's (a response without a refresh token keeps the old one).
    func fleetSignIn(_ fleet: FleetBinding, user: User, credentials: Credentials) async throws -> MigrationReport {
        guard user.id == fleet.name else {
            throw VaultError(.invalidInput, "a fleet session's user is the session itself ('\(TerminalText.escaped(fleet.name))')",
                             fix: "sign in with the session's name as the user id")
        }
        try await fleet.store.saveCredentials(credentials, session: fleet.name)
        return MigrationReport(anonymousID: "", userID: fleet.name, moved: [], conflicts: [], stayed: [])
    }

    /// Valid credentials for `minTTL` plus the leeway: as stored, or refreshed once across the fleet.
    func fleetValidCredentials(_ fleet: FleetBinding, minTTL: Duration, refresher: @escaping TokenRefresher) async throws -> Credentials {
        let stored = try await fleet.store.storedCredentials(session: fleet.name)
        if isValid(stored, minTTL: minTTL) { return stored }
        let configuration = configuration
        let fresh = try await Self.endingOnInvalidGrant {
            try await fleet.store.validCredentials(session: fleet.name, isValid: { credentials in
                Self.isValid(credentials, minTTL: minTTL, leeway: configuration.leeway, now: configuration.clock())
            }, refresher: refresher)
        }
        try checkLifetime(of: fresh, satisfies: minTTL)
        return fresh
    }

    /// Refreshes now, whatever the expiry (once across the fleet).
    func fleetRefreshNow(_ fleet: FleetBinding, refresher: @escaping TokenRefresher) async throws -> Credentials {
        try await Self.endingOnInvalidGrant {
            try await fleet.store.validCredentials(session: fleet.name, isValid: { _ in false }, refresher: refresher)
        }
    }

    /// `body`, with the refresher's `RefreshFailure.invalidGrant` reported as `.sessionExpired`, as
    /// the vault file's session does (the fleet's tokens stay: every replica sees the same answer).
    static func endingOnInvalidGrant(_ body: () async throws -> Credentials) async throws -> Credentials {
        do {
            return try await body()
        } catch RefreshFailure.invalidGrant(let description) {
            throw VaultError(.sessionExpired, "the server rejected the refresh token (invalid_grant"
                                 + (description.map { ": \(TerminalText.escaped($0))" } ?? "") + ")",
                             fix: "sign the session in again")
        }
    }
}

extension SessionManager {
    /// A token for an OAuth client itself (the `client_credentials` grant, RFC 6749 §4.4), kept as
    /// the session of the user `client:ID` (on a fleet: the fleet session): the stored one while it
    /// is valid for `minTTL` plus the leeway, else a new one from `fetch` (once across processes
    /// on a fleet), saved before it is returned.
    /// - Parameters:
    ///   - clientID: The client's id.
    ///   - minTTL: How long the token must stay valid.
    ///   - fetch: Asks the token endpoint for a new token.
    /// - Throws: `.alreadyExists` when a user (not the client) is signed in on this device;
    ///   `fetch`'s errors; store errors.
    public func clientCredentials(clientID: String, minTTL: Duration = .zero,
                                  fetch: @escaping @Sendable () async throws -> Credentials) async throws -> Credentials {
        if let fleet {
            do {
                return try await fleetValidCredentials(fleet, minTTL: minTTL) { _ in try await fetch() }
            } catch let error as VaultError where error.code == .notSignedIn || error.code == .sessionExpired {
                let fresh = try await fetch()
                try await fleet.store.saveCredentials(fresh, session: fleet.name)
                return fresh
            }
        }
        let clientUser = User(id: "client:" + clientID, signInMethod: "client_credentials", onboardingComplete: true)
        let state = await peek(minTTL: minTTL)
        if let user = state.user, user.id != clientUser.id {
            throw VaultError(.alreadyExists, "'\(TerminalText.escaped(user.id))' is signed in, not the client", fix: "sign out first",
                             topic: .alreadySignedIn)
        }
        if let credentials = state.credentials { return credentials }
        let credentials = try await fetch()
        try await signIn(user: clientUser, credentials: credentials)
        return credentials
    }
}
