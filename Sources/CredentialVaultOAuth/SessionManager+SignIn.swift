import CredentialVault

/// How `SessionManager.signIn(using:client:)` signs the user in.
public enum SignInMethod: Sendable {
    /// The device authorization grant (RFC 8628), for a device without a browser of its own: `show`
    /// is given the code and the address the user opens elsewhere (show them; return at once).
    case device(show: @Sendable (DeviceAuthorization) async -> Void)
}

/// What a sign-in through `signIn(using:client:)` did.
public struct SignInResult: Sendable {
    /// The signed-in user (the id is the server's `sub`).
    public let user: User
    /// What moved from the guest, conflicted and stayed.
    public let migration: MigrationReport
}

extension SessionManager {
    /// Signs a user in in one call: starts the grant, shows the code through the app's closure,
    /// polls until the user approves, learns the user id from the server (the ID token's `sub`,
    /// else userinfo), then `signIn(user:credentials:policy:)` upgrades the guest. When the
    /// server gives no user id, or the sign-in cannot be saved, the fresh tokens are revoked at the
    /// server before the error is thrown: nothing is left alive that the app does not hold.
    /// - Parameters:
    ///   - method: `.device(show:)`.
    ///   - client: The app's OAuth client (a public client for the device grant).
    ///   - policy: How to resolve items present in both the guest and the account.
    ///   - onboardingComplete: Whether the new user counts as onboarded (a returning user who
    ///     finished onboarding keeps it whatever this says).
    /// - Returns: The user and what moved from the guest.
    /// - Throws: `.alreadyExists` (before anything is shown) when someone is signed in;
    ///   `OAuthError` (`.accessDenied`, `.expiredToken`, transient, configuration; `.configuration`
    ///   when the server tells no user id); the store's errors, as `signIn(user:credentials:policy:)`.
    @discardableResult
    public func signIn(using method: SignInMethod, client: OAuthClient, policy: MergePolicy = .keepAccount,
                       onboardingComplete: Bool = false) async throws -> SignInResult {
        if let signedIn = await peek().user {
            throw VaultError(.alreadyExists, "already signed in as '\(TerminalText.escaped(signedIn.id))'", fix: "sign out first",
                             topic: .alreadySignedIn)
        }
        let credentials: Credentials
        switch method {
        case let .device(show):
            let authorization = try await client.startDeviceAuthorization()
            await show(authorization)
            credentials = try await client.pollDeviceAuthorization(authorization)
        }
        var subjectSeen: String?
        do {
            guard let subject = try await client.subject(of: credentials) else {
                throw OAuthError(.configuration, endpoint: "token endpoint",
                                 detail: "the server sent no ID token and has no userinfo endpoint, so the user id is unknown "
                                     + "(ask for the 'openid' scope); the tokens were revoked")
            }
            subjectSeen = subject
            let user = User(id: subject, signInMethod: "device", onboardingComplete: onboardingComplete)
            let migration = try await signIn(user: user, credentials: credentials, policy: policy)
            return SignInResult(user: user, migration: migration)
        } catch {
            // Revoked unless the sign-in landed after all (an error after its commit point): then
            // the tokens are the live session's.
            let signedIn = await peek().user?.id
            if subjectSeen == nil || signedIn != subjectSeen { _ = await client.revokeAll(credentials) }
            throw error
        }
    }
}
