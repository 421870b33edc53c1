import CredentialVault

extension SessionManager {
    /// Credentials valid for at least `minTTL`, refreshed through `client` when needed, with
    /// the session's single-flight refresh and atomic save.
    ///
    /// A process that finds another one refreshing waits for it up to the client's whole refresh
    /// budget (`OAuthConfiguration.refreshBudget`), never less than the session's `lockTimeout`:
    /// so waiters outlast a slow refresh instead of failing with `busy` first.
    /// - Throws: as `validCredentials(minTTL:refresher:)`; `OAuthError` for transient and
    ///   configuration failures (the session is kept).
    public func validCredentials(minTTL: Duration = .zero, client: OAuthClient) async throws -> Credentials {
        try await validCredentials(minTTL: minTTL, refreshLockWait: client.configuration.refreshBudget, refresher: client.refresher)
    }

    /// Refreshes now through `client`, even when the access token is still valid.
    public func refreshNow(client: OAuthClient) async throws -> Credentials {
        try await refreshNow(refresher: client.refresher)
    }

    /// Signs out locally first (never blocked by the network), then revokes the tokens at the
    /// server (RFC 7009).
    /// - Returns: what the server did; the local wipe has happened whatever it says.
    /// - Throws: only local failures, as `signOut(newAnonymousID:)`.
    public func signOut(revokingWith client: OAuthClient, newAnonymousID: Bool = false) async throws -> RevocationReport {
        guard let removed = try await signOut(newAnonymousID: newAnonymousID) else {
            return RevocationReport(outcome: .nothingToRevoke, revoked: [])
        }
        return await client.revokeAll(removed)
    }
}
