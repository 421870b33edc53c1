import FoundationEssentials
import VaultCrypto

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
        try await backend.clientCredentials(of: self, clientID: clientID, minTTL: minTTL, fetch: fetch)
    }

    /// `clientCredentials` on a device: the client is the signed-in user `client:ID`.
    func deviceClientCredentials(clientID: String, minTTL: Duration,
                                 fetch: @escaping @Sendable () async throws -> Credentials) async throws -> Credentials {
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
