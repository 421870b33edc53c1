import CredentialVault
import CredentialVaultOAuth
import Foundation
import OAuthServerSupport
import Testing
import TestScheduling
import VaultCrypto

/// Device sign-in, refresh with rotation, client credentials and discovery against the real
/// django-oauth-toolkit server started by scripts/oauth-server.
@Suite("OAuth against the real server: sign-in and refresh", .blockingWork, .enabled(if: OAuthServer.shouldRun))
struct RealServerSignInTests {
    @Test("device sign-in: pending until the user approves, then tokens; the user id from the server; guest items migrate")
    func deviceSignIn() async throws {
        let server = try OAuthServer.require()
        let client = try server.deviceClient()
        defer { Task { try? await client.shutdown() } }
        let folder = try SessionFolder()
        defer { folder.cleanUp() }
        let session = try folder.session()
        _ = await session.restore()
        try await session.saveItem(NewEntry(name: "draft", secret: secret("guest-draft"), transferable: true))

        let authorization = try await client.startDeviceAuthorization()
        #expect(!authorization.userCode.isEmpty)
        #expect(authorization.verificationURI.hasPrefix("http://127.0.0.1:"))
        #expect(!authorization.description.contains("device_code"))
        async let approval: Void = {
            try await Task.sleep(for: .milliseconds(1500))   // at least one authorization_pending first
            try server.approve(authorization)
        }()
        let credentials = try await client.pollDeviceAuthorization(authorization)
        try await approval
        #expect(credentials.refreshToken != nil)
        #expect(credentials.scopes.contains("read"))
        let subject = try await client.subject(of: credentials)
        #expect(subject == (try server.userID))

        let report = try await session.signIn(user: User(id: subject ?? "?", onboardingComplete: true), credentials: credentials)
        #expect(report.moved == ["draft"])
        #expect(try await session.item(named: "draft") == secret("guest-draft"))
        let state = await session.restore()
        #expect(state.name == "signedIn")
    }

    @Test("a denied device code is accessDenied, not a hang")
    func deviceDenied() async throws {
        let server = try OAuthServer.require()
        let client = try server.deviceClient()
        defer { Task { try? await client.shutdown() } }
        let authorization = try await client.startDeviceAuthorization()
        try server.approve(authorization, deny: true)
        let error = await #expect(throws: OAuthError.self) { try await client.pollDeviceAuthorization(authorization) }
        #expect(error?.kind == .accessDenied)
        #expect(error?.description.contains("token endpoint http://127.0.0.1:") == true)
    }

    @Test("refresh rotates (client_secret_basic and _post): saved atomically, and the server itself rejects the old refresh token",
          arguments: [false, true])
    func refreshRotates(post: Bool) async throws {
        let server = try OAuthServer.require()
        let client = try server.confidentialClient(post: post)
        defer { Task { try? await client.shutdown() } }
        let folder = try SessionFolder()
        defer { folder.cleanUp() }
        let session = try folder.session()
        _ = await session.restore()
        let initial = try server.passwordGrant()
        let oldRefresh = try #require(initial.refreshToken)
        try await session.signIn(user: User(id: try server.userID, onboardingComplete: true), credentials: initial.expiredLocally)

        let fresh = try await session.validCredentials(client: client)
        #expect(fresh.accessToken != initial.accessToken)
        let newRefresh = try #require(fresh.refreshToken)
        #expect(newRefresh != oldRefresh)
        // Saved before it was returned: a new session over the same folder has the new pair.
        let reloaded = await (try folder.session()).restore()
        #expect(reloaded.credentials?.refreshToken == newRefresh)

        let old = try server.records(of: oldRefresh)
        #expect(old.kind == "refresh" && old.revoked)
        #expect(old.refreshGrants == 1)
        #expect(try server.records(of: newRefresh).revoked == false)
        // The server's own verdict on the old one (this also revokes the family: reuse protection).
        let error = await #expect(throws: OAuthError.self) { try await client.refresh(oldRefresh) }
        #expect(error?.kind == .invalidGrant)
        #expect(error?.serverError == "invalid_grant")
    }

    @Test("a valid access token is returned without a call to the server")
    func validTokenMakesNoCall() async throws {
        let server = try OAuthServer.require()
        let folder = try SessionFolder()
        defer { folder.cleanUp() }
        let session = try folder.session()
        _ = await session.restore()
        var initial = try server.passwordGrant()
        initial.expiresAt = Date().addingTimeInterval(3600)   // valid by our clock however slow the machine
        try await session.signIn(user: User(id: "u", onboardingComplete: true), credentials: initial)
        // A client whose token endpoint is a closed port: any call would fail.
        let client = try OAuthClient(configuration: OAuthConfiguration(
            issuer: nil, endpoints: OAuthEndpoints(token: URL(string: "http://127.0.0.1:9/token")), clientID: "x", retry: .never))
        defer { Task { try? await client.shutdown() } }
        let credentials = try await session.validCredentials(client: client)
        #expect(credentials.accessToken == initial.accessToken)
    }

    @Test("client credentials (RFC 6749 §4.4) for a daemon; a wrong secret is a configuration error")
    func clientCredentials() async throws {
        let server = try OAuthServer.require()
        let client = try OAuthClient(configuration: OAuthConfiguration(
            issuer: try server.issuer, clientID: try server.string("daemon_client_id"),
            authentication: .clientSecretBasic(try server.secret("daemon")), scopes: ["read"]))
        defer { Task { try? await client.shutdown() } }
        let credentials = try await client.clientCredentials()
        #expect(credentials.expiresAt != nil)
        #expect(try server.records(of: credentials.accessToken).kind == "access")

        let wrong = try OAuthClient(configuration: OAuthConfiguration(
            issuer: try server.issuer, clientID: try server.string("daemon_client_id"),
            authentication: .clientSecretPost(secret("not-the-secret")), retry: .never))
        defer { Task { try? await wrong.shutdown() } }
        let error = await #expect(throws: OAuthError.self) { try await wrong.clientCredentials() }
        #expect(error?.kind == .configuration)
        #expect(error?.serverError == "invalid_client")
        #expect(error?.description.contains("not-the-secret") == false)
    }

    @Test("discovery merges the RFC 8414 and OIDC documents of the real server; an override wins")
    func discovery() async throws {
        let server = try OAuthServer.require()
        let client = try OAuthClient(configuration: OAuthConfiguration(issuer: try server.issuer, clientID: "vault-device"))
        defer { Task { try? await client.shutdown() } }
        let metadata = try await client.metadata()
        #expect(metadata.endpoints.token == (try server.tokenEndpoint))
        #expect(metadata.endpoints.revocation?.absoluteString.hasSuffix("/o/revoke_token/") == true)
        #expect(metadata.endpoints.userinfo?.absoluteString.hasSuffix("/o/userinfo/") == true)   // only in the OIDC document
        #expect(metadata.endpoints.deviceAuthorization == nil)   // this server lists it in neither document
        #expect(metadata.grantTypes.contains("refresh_token"))
        // An overridden endpoint wins over discovery.
        let overridden = try OAuthClient(configuration: OAuthConfiguration(
            issuer: try server.issuer, endpoints: OAuthEndpoints(revocation: URL(string: "http://127.0.0.1:9/revoke")),
            clientID: "vault-device", retry: .never))
        defer { Task { try? await overridden.shutdown() } }
        let report = await overridden.revokeAll(Credentials(accessToken: secret("a")))
        #expect(!report.succeeded)
        #expect(report.description.contains("127.0.0.1:9/revoke"))
    }
}
