import CredentialVault
import FoundationEssentials

/// How `SessionManager.signIn(using:client:)` signs the user in.
public enum SignInMethod: Sendable {
    /// The device authorization grant (RFC 8628), for a device without a browser of its own: `show`
    /// is given the code and the address the user opens elsewhere (show them; return at once).
    case device(show: @Sendable (DeviceAuthorization) async -> Void)
    /// The browser: authorization code with PKCE and a loopback redirect (RFC 8252). `open` is
    /// given the authorization URL (show it, and start the system browser with
    /// `OAuthClient.startURI(forAuthorizationURL:)`, which keeps the URL out of the browser's
    /// arguments; return at once); `port` is the loopback port (nil for a free one) and `wait`
    /// how long the user has.
    case browser(port: Int? = nil, wait: Duration = .seconds(300), open: @Sendable (URL) async -> Void)
}

/// What a sign-in through `signIn(using:client:)` did.
public struct SignInResult: Sendable {
    /// The signed-in user (the id is the server's `sub`).
    public let user: User
    /// What moved from the guest, conflicted and stayed.
    public let migration: MigrationReport
}

extension SessionManager {
    /// Signs a user in in one call: the device grant (shows the code through the app's closure,
    /// polls until the user approves) or the browser (PKCE, loopback redirect, `state`, `nonce`
    /// and RFC 9207 `iss` checked); learns the user id from the server (the verified ID token's
    /// `sub`, name and email, else userinfo's), then `signIn(user:credentials:policy:)` upgrades the guest. When the
    /// server gives no user id, or the sign-in cannot be saved, the fresh tokens are revoked at the
    /// server before the error is thrown: nothing is left alive that the app does not hold.
    /// - Parameters:
    ///   - method: `.device(show:)` or `.browser(port:wait:open:)`.
    ///   - client: The app's OAuth client (a public client for the device grant).
    ///   - policy: How to resolve items present in both the guest and the account.
    ///   - onboardingComplete: Whether the new user counts as onboarded (a returning user who
    ///     finished onboarding keeps it whatever this says).
    /// - Returns: The user and what moved from the guest.
    /// - Throws: `.alreadyExists` (before anything is shown) when someone is signed in;
    ///   `OAuthError` (`.accessDenied`, `.expiredToken`, transient, configuration; `.configuration`
    ///   when the server tells no user id; `.verificationFailed` for a refused ID token or `iss`);
    ///   `LoopbackRedirectError` (browser: the port cannot be bound, no callback in time); the store's errors, as `signIn(user:credentials:policy:)`.
    @discardableResult
    public func signIn(using method: SignInMethod, client: OAuthClient, policy: MergePolicy = .keepAccount,
                       onboardingComplete: Bool = false) async throws -> SignInResult {
        if let signedIn = await peek().user {
            throw VaultError(.alreadyExists, "already signed in as '\(TerminalText.escaped(signedIn.id))'", fix: "sign out first",
                             topic: .alreadySignedIn)
        }
        return try await signIn(using: method, client: client, policy: policy) { found in
            guard let subject = found.subject else {
                throw OAuthError(.configuration, endpoint: "token endpoint",
                                 detail: "the server sent no ID token and has no userinfo endpoint, so the user id is unknown "
                                     + "(ask for the 'openid' scope); the tokens were revoked")
            }
            return User(id: subject, displayName: found.name, email: found.email, signInMethod: found.methodName,
                        onboardingComplete: onboardingComplete)
        }
    }

    /// What the server said of the user who signed in, for `signIn(using:client:policy:lookingUpSubject:user:)`.
    package struct SignInIdentity: Sendable {
        /// The verified ID token's `sub`, else userinfo's; nil when the server told neither (or was not asked).
        package let subject: String?
        /// The `name` and `email` of the same source.
        package let name: String?
        package let email: String?
        /// "device" or "browser".
        package let methodName: String
    }

    /// The sign-in of `signIn(using:client:policy:onboardingComplete:)` with the user made by
    /// `user` from what the server said (a command line's `--user-id`, `--name`, …). Every ID token
    /// is verified as there; with `lookingUpSubject` false, userinfo is not asked when no ID token came.
    /// When `user` throws, or the sign-in cannot be saved, the fresh tokens are revoked first.
    package func signIn(using method: SignInMethod, client: OAuthClient, policy: MergePolicy, lookingUpSubject: Bool = true,
                        user makeUser: @Sendable (SignInIdentity) throws -> User) async throws -> SignInResult {
        let credentials: Credentials
        var verified: VerifiedIDToken?
        let methodName: String
        switch method {
        case let .device(show):
            let authorization = try await client.startDeviceAuthorization()
            await show(authorization)
            credentials = try await client.pollDeviceAuthorization(authorization)
            methodName = "device"
        case let .browser(port, wait, open):
            let result = try await client.signInWithBrowser(port: port, wait: wait, open: open)
            credentials = result.credentials
            verified = result.identity
            methodName = "browser"
        }
        var subjectSeen: String?
        do {
            if methodName == "device", client.configuration.issuer != nil {
                verified = try await client.verifiedIdentity(of: credentials)
            }
            var found = SignInIdentity(subject: verified?.subject, name: verified?.name, email: verified?.email, methodName: methodName)
            if verified == nil, lookingUpSubject, let info = try await client.userInfo(of: credentials) {
                found = SignInIdentity(subject: info.subject, name: info.name, email: info.email, methodName: methodName)
            }
            let user = try makeUser(found)
            subjectSeen = user.id
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
