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
        func url(_ text: String?, _ what: String) throws -> URL? {
            guard let text else { return nil }
            guard let url = URL(string: text), url.scheme != nil, url.host != nil else {
                throw VaultError(.invalidInput, "the stored \(what) '\(text)' is not a URL", fix: "store the client again with 'vault client'")
            }
            return url
        }
        let authentication: ClientAuthentication
        switch configuration.authMethod {
        case .none:
            authentication = .none
        case .clientSecretBasic, .clientSecretPost:
            guard let secret else {
                throw VaultError(.notFound, "the stored client's secret is missing", fix: "store the client again with 'vault client'")
            }
            authentication = configuration.authMethod == .clientSecretBasic ? .clientSecretBasic(secret) : .clientSecretPost(secret)
        }
        var oauthConfiguration = OAuthConfiguration(
            issuer: try url(configuration.issuer, "issuer"),
            endpoints: OAuthEndpoints(token: try url(configuration.tokenEndpoint, "token endpoint"),
                                      revocation: try url(configuration.revocationEndpoint, "revocation endpoint"),
                                      deviceAuthorization: try url(configuration.deviceEndpoint, "device endpoint"),
                                      authorization: try url(configuration.authorizationEndpoint, "authorization endpoint")),
            clientID: configuration.clientID, authentication: authentication, scopes: configuration.scopes,
            caBundlePath: configuration.caBundle, requestTimeout: requestTimeout)
        oauthConfiguration.caBundlePEM = caBundle
        if configuration.dpop {
            guard let dpopKey else {
                throw VaultError(.notFound, "the stored client binds its tokens with DPoP, but its key is missing",
                                 fix: "store the client again with 'vault client --dpop', or sign in again with --dpop")
            }
            oauthConfiguration.dpopKey = try P256SigningKey(rawRepresentation: dpopKey)
        }
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

/// `OAuthClient` behind the commands' `CommandOAuthClient`.
struct CommandClient: CommandOAuthClient {
    let client: OAuthClient

    func refresh(_ refreshToken: SecureBytes) async throws -> Credentials {
        try await client.refresh(refreshToken)
    }

    var refresher: TokenRefresher { client.refresher }

    var audienceRefresher: AudienceTokenRefresher { client.audienceRefresher }

    func clientCredentials() async throws -> Credentials {
        try await client.clientCredentials()
    }

    func signInWithDevice(lookingUpSubject: Bool, show: (String) -> Void) async throws -> (credentials: Credentials, subject: String?) {
        let authorization = try await client.startDeviceAuthorization()
        var text = "To sign in, open \(authorization.verificationURI) and enter the code \(authorization.userCode)"
        if let complete = authorization.verificationURIComplete { text += "\n(or open \(complete))" }
        show(text)
        let credentials = try await client.pollDeviceAuthorization(authorization)
        do {
            return (credentials, lookingUpSubject ? try await client.subject(of: credentials) : nil)
        } catch {
            // A refused ID token (or no way to check it): the fresh tokens are not left alive.
            _ = await client.revokeAll(credentials)
            throw error
        }
    }

    func signInWithBrowser(port: Int?, wait: Duration, open: @Sendable (String) async -> Void) async throws -> CommandSignIn {
        let result = try await client.signInWithBrowser(port: port, wait: wait) { url in await open(url.absoluteString) }
        if let identity = result.identity {
            return CommandSignIn(credentials: result.credentials, subject: identity.subject, name: identity.name, email: identity.email)
        }
        // No ID token: userinfo, when the server has it (OpenID Connect); else the caller's --user-id.
        do {
            return CommandSignIn(credentials: result.credentials, subject: try await client.subject(of: result.credentials))
        } catch {
            _ = await client.revokeAll(result.credentials)
            throw error
        }
    }

    func revokeAll(_ credentials: Credentials) async -> (succeeded: Bool, summary: String, revoked: [String]) {
        let report = await client.revokeAll(credentials)
        return (report.succeeded, report.description, report.revoked)
    }

    func revoke(_ token: SecureBytes, hint: String) async -> Bool {
        (try? await client.revoke(token, hint: hint)) != nil
    }

    func shutdown() async throws {
        try await client.shutdown()
    }
}
