import VaultCrypto

/// A store whose sessions are shared by a fleet (`PostgresSecretStore`, in CredentialVaultPostgres): a session is a name
/// (`SessionManager(fleet:session:)`, the CLI's `--session`), its tokens are entries owned by it, and a refresh happens once across every
/// process that needs one at the same time (an advisory lock held through check, refresh and save).
package protocol FleetSessionStore: SecretStorage {
    /// Saves a session's tokens in one transaction (a response without a refresh token keeps the old one).
    func saveCredentials(_ credentials: Credentials, session: String) async throws
    /// The session's credentials while `isValid` says so, else refreshed through `refresher`
    /// (once across the fleet: check, refresh and save under one lock). The session's expiry rule
    /// (`SessionManager`: leeway, injected clock) is `isValid`.
    func validCredentials(session: String, isValid: @escaping @Sendable (Credentials) -> Bool,
                          refresher: @escaping @Sendable (SecureBytes) async throws -> Credentials) async throws -> Credentials
    /// The session's tokens as stored. - Throws: `.notSignedIn` when it has none.
    func storedCredentials(session: String) async throws -> Credentials
    /// Removes the session's tokens; returns them (for revocation), or nil when there were none.
    func removeCredentials(session: String) async throws -> Credentials?
}
