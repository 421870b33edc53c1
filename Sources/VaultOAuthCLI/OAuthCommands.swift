import CredentialVault
import CredentialVaultOAuth
import FoundationEssentials
import VaultCLI
import VaultCrypto

/// The OAuth client (`CredentialVaultOAuth`) as the command line uses it: linked into
/// `vault-oauth` and `vault-postgres`, never into `vault` (docs/ARCHITECTURE.md, "Helper executables").
package struct OAuthCommands: OAuthCommandSupport {
    /// The OAuth support.
    package init() {}

    package func client(for configuration: StoredClientConfiguration, secret: SecureBytes?, requestTimeout: Duration,
                        caBundle: [UInt8]?, dpopKey: SecureBytes?) throws -> any CommandOAuthClient {
        let oauthConfiguration = try OAuthConfiguration(stored: configuration, secret: secret, dpopKey: dpopKey, caBundle: caBundle,
                                                        requestTimeout: requestTimeout)
        return CommandClient(client: try OAuthClient(configuration: oauthConfiguration))
    }

    /// 69 for transient failures (the session is kept), 77 for a dead grant, 76 for the rest.
    package func report(_ error: any Error) -> ReportedError? {
        if let error = error as? LoopbackRedirectError {
            switch error.kind {
            case .portUnavailable:
                return ReportedError(message: error.description, hint: "choose another --redirect-port, or leave it out for a free one",
                                     exitStatus: VaultExitStatus.systemError)
            case .noCallback:
                return ReportedError(message: error.description + "; nothing was stored",
                                     hint: "finish the sign-in in the browser sooner, or give more time with --wait",
                                     exitStatus: VaultExitStatus.busy)
            }
        }
        guard let error = error as? OAuthError else { return nil }
        return ReportedError(message: error.description, hint: Self.hint(for: error), exitStatus: Self.exitStatus(for: error))
    }

    static func exitStatus(for error: OAuthError) -> Int32 {
        switch error.kind {
        case .transient: VaultExitStatus.serverUnavailable
        case .invalidGrant: VaultExitStatus.permission
        case .configuration, .accessDenied, .expiredToken, .insecureEndpoint, .verificationFailed: VaultExitStatus.serverRefused
        }
    }

    static func hint(for error: OAuthError) -> String? {
        switch error.kind {
        case .transient: "nothing changed and the session is kept; try again later"
        case .invalidGrant: "sign in again"
        case .configuration: "check the client id, secret and endpoints ('vault client')"
        case .accessDenied: "the sign-in was declined at the verification page"
        case .expiredToken: "the code expired; run 'vault signin --device' again"
        case .insecureEndpoint: "use https (plain http is allowed only to 127.0.0.1, ::1 or localhost)"
        case .verificationFailed: "nothing was stored; check the issuer and client id, or tell the server's operator"
        }
    }
}

/// The library's session operations with an `OAuthClient`, behind the commands' `CommandOAuthClient`.
struct CommandClient: CommandOAuthClient {
    let client: OAuthClient

    func signIn(_ session: SessionManager, method: CommandSignInMethod, policy: MergePolicy, lookingUpSubject: Bool,
                user: @Sendable (CommandSignInIdentity) throws -> User) async throws -> MigrationReport {
        let using: SignInMethod = switch method {
        case let .device(show):
            .device { authorization in
                var text = "To sign in, open \(authorization.verificationURI) and enter the code \(authorization.userCode)"
                if let complete = authorization.verificationURIComplete { text += "\n(or open \(complete))" }
                show(text)
            }
        case let .browser(port, wait, open):
            .browser(port: port, wait: wait) { url in
                await open(url.absoluteString, (OAuthClient.startURI(forAuthorizationURL: url) ?? url).absoluteString)
            }
        }
        return try await session.signIn(using: using, client: client, policy: policy, lookingUpSubject: lookingUpSubject) { found in
            try user(CommandSignInIdentity(subject: found.subject, name: found.name, email: found.email, methodName: found.methodName))
        }.migration
    }

    func signOut(_ session: SessionManager, newAnonymousID: Bool) async throws -> CommandRevocation {
        Self.shown(try await session.signOut(revokingWith: client, newAnonymousID: newAnonymousID))
    }

    func enterGuestMode(_ session: SessionManager, resetAnonymousID: Bool) async throws -> (anonymousID: String, revocation: CommandRevocation) {
        let report = try await session.enterGuestMode(resetAnonymousID: resetAnonymousID, revokingWith: client)
        return (report.anonymousID, Self.shown(report.revocation))
    }

    func recoverFromMissingProfile(_ session: SessionManager, ending: @Sendable (String) -> Void,
                                   ended: @Sendable (String, CommandRevocation) -> Void) async throws -> [String] {
        Array(try await session.recoverFromMissingProfile(revokingWith: client, ending: ending) { ended($0, Self.shown($1)) }.keys)
    }

    func refreshNow(_ session: SessionManager, warning: @escaping @Sendable (String) -> Void) async throws -> Credentials {
        try await session.refreshNow(client: client, warning: warning)
    }

    func validCredentials(_ session: SessionManager, minTTL: Duration, warning: @escaping @Sendable (String) -> Void) async throws -> Credentials {
        try await session.validCredentials(minTTL: minTTL, client: client, retryingRevocations: false, warning: warning)
    }

    func validCredentials(_ session: SessionManager, forAudience audience: String, minTTL: Duration) async throws -> Credentials {
        try await session.validCredentials(forAudience: audience, minTTL: minTTL, client: client)
    }

    func clientCredentials(_ session: SessionManager, clientID: String, minTTL: Duration) async throws -> Credentials {
        try await session.clientCredentials(clientID: clientID, minTTL: minTTL) { try await client.clientCredentials() }
    }

    func shutdown() async throws {
        try await client.shutdown()
    }

    private static func shown(_ report: RevocationReport) -> CommandRevocation {
        let hadTokens = if case .nothingToRevoke = report.outcome { false } else { true }
        return CommandRevocation(succeeded: report.succeeded, summary: report.description, hadTokens: hadTokens,
                                 keptForLater: report.keptForLater, couldNotKeep: report.couldNotKeep,
                                 earlier: report.earlier.map { ($0.revoked, $0.tried) })
    }
}
