import FoundationEssentials
import VaultCrypto

/// A session shared by a fleet: the same `SessionManager`, the same rules (the leeway with the
/// injected clock, the `client_credentials` grant, single-flight refresh), over a store every
/// replica shares (`FleetSessionStore`: `PostgresSecretStore`). The session is a name; its user is
/// `User(id: name)`. A fleet has no guest, profile, onboarding, items or settings: `device(for:)`
/// refuses them with `.unsupportedOperation` (docs/SESSIONS.md, "Fleet sessions").
struct FleetBackend: SessionBackend {
    /// The store every replica shares.
    let store: any FleetSessionStore
    /// The session's name (an owner name: `EntryValidation.checkOwner`).
    let name: String

    func device(for feature: DeviceFeature) throws -> any DeviceSessionBackend {
        if feature == .audienceTokens {
            throw VaultError(.unsupportedOperation, "per-audience tokens are kept in the vault file's session only")
        }
        throw VaultError(.unsupportedOperation, "a fleet session has no \(feature.text): only the session's tokens are shared",
                         fix: "use a session over a vault file for guest mode, onboarding, items and settings")
    }

    /// The state of the fleet session: signed in (onboarding does not apply), expired, or
    /// guest when it has no tokens. Never throws: failures are `.unavailable`.
    func restoredState(of session: isolated SessionManager, minTTL: Duration, refreshLockWait: Duration?) async -> SessionState {
        let user = User(id: name, onboardingComplete: true)
        do {
            let credentials: Credentials
            do {
                credentials = try await store.storedCredentials(session: name)
            } catch let error as VaultError where error.code == .notSignedIn {
                return .guest(anonymousID: "")
            }
            guard session.isValid(credentials, minTTL: minTTL) else {
                return .expired(user, hasRefreshToken: credentials.refreshToken != nil, expiresAt: credentials.expiresAt)
            }
            return .signedIn(user, credentials)
        } catch {
            return session.unavailable(error)
        }
    }

    /// As `restoredState`: a fleet session has nothing to settle.
    func peekedState(of session: isolated SessionManager, minTTL: Duration) async -> SessionState {
        await restoredState(of: session, minTTL: minTTL, refreshLockWait: nil)
    }

    func storedCredentials(of session: isolated SessionManager) async throws -> Credentials {
        try await store.storedCredentials(session: name)
    }

    /// Valid credentials for `minTTL` plus the leeway: as stored, or refreshed once across the fleet.
    func validCredentials(of session: isolated SessionManager, minTTL: Duration, refreshLockWait: Duration?,
                          refresher: @escaping TokenRefresher) async throws -> Credentials {
        let stored = try await store.storedCredentials(session: name)
        if session.isValid(stored, minTTL: minTTL) { return stored }
        let configuration = session.configuration
        let fresh = try await Self.endingOnInvalidGrant {
            try await store.validCredentials(session: name, isValid: { credentials in
                SessionManager.isValid(credentials, minTTL: minTTL, leeway: configuration.leeway, now: configuration.clock())
            }, refresher: refresher)
        }
        try session.checkLifetime(of: fresh, satisfies: minTTL)
        return fresh
    }

    /// Refreshes now, whatever the expiry (once across the fleet).
    func refreshNow(of session: isolated SessionManager, refreshLockWait: Duration?, joining: Bool,
                    refresher: @escaping TokenRefresher) async throws -> Credentials {
        try await Self.endingOnInvalidGrant {
            try await store.validCredentials(session: name, isValid: { _ in false }, refresher: refresher)
        }
    }

    /// Saves the tokens as the fleet session's (a response without a refresh token keeps the old one).
    func signIn(of session: isolated SessionManager, user: User, credentials: Credentials, policy: MergePolicy) async throws -> MigrationReport {
        guard user.id == name else {
            throw VaultError(.invalidInput, "a fleet session's user is the session itself ('\(TerminalText.escaped(name))')",
                             fix: "sign in with the session's name as the user id")
        }
        try await store.saveCredentials(credentials, session: name)
        return MigrationReport(anonymousID: "", userID: name, moved: [], conflicts: [], stayed: [])
    }

    /// Removes the session's tokens (every replica is signed out).
    func signOut(of session: isolated SessionManager, localData: LocalDataPolicy?, newAnonymousID: Bool,
                 resetSettings: Bool) async throws -> Credentials? {
        try await store.removeCredentials(session: name)
    }

    /// The fleet session's token: the stored one while valid, else refreshed through `fetch` once
    /// across the fleet; a fleet without tokens (or whose refresh the server refused) fetches one and saves it.
    func clientCredentials(of session: isolated SessionManager, clientID: String, minTTL: Duration,
                           fetch: @escaping @Sendable () async throws -> Credentials) async throws -> Credentials {
        do {
            return try await validCredentials(of: session, minTTL: minTTL, refreshLockWait: nil) { _ in try await fetch() }
        } catch let error as VaultError where error.code == .notSignedIn || error.code == .sessionExpired {
            let fresh = try await fetch()
            try await store.saveCredentials(fresh, session: name)
            return fresh
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
