import CredentialVault
import CredentialVaultOAuth
import Foundation
import Synchronization
import OAuthServerSupport
import Testing
import TestScheduling
import VaultCrypto

/// The app's one-call browser sign-in (`signIn(using: .browser(open:))`) against the real
/// django-oauth-toolkit server; the app's "open the URL" is scripts/test-browser, which logs in
/// through the server's own login and consent pages.
@Suite("Browser sign-in for apps against the real server", .blockingWork, .enabled(if: OAuthServer.shouldRun))
struct BrowserSignInTests {
    func client(_ server: OAuthServer) throws -> OAuthClient {
        try OAuthClient(configuration: OAuthConfiguration(issuer: try server.issuer, clientID: try server.string("browser_client_id"),
                                                          scopes: ["read"], retry: RetryPolicy(baseDelay: .milliseconds(50))))
    }

    /// Starts the test browser on `url` and returns at once, as an app's opener does.
    static func openInTestBrowser(_ url: URL, modes: String = "") {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: OAuthServer.repositoryRoot + "/scripts/test-browser")
        process.arguments = [url.absoluteString]
        process.environment = ProcessInfo.processInfo.environment.merging(["VAULT_TEST_BROWSER": modes]) { $1 }
        try? process.run()
    }

    @Test("PKCE + loopback: the verified ID token names the user, guest items migrate, tokens refresh")
    func signsIn() async throws {
        let server = try OAuthServer.require()
        let client = try client(server)
        let folder = try SessionFolder()
        defer { folder.cleanUp() }
        let session = try folder.session()
        _ = await session.restore()
        try await session.saveItem(NewEntry(name: "draft", secret: secret("guest-draft"), transferable: true))
        let opened = Mutex<URL?>(nil)
        let result = try await session.signIn(using: .browser(wait: .seconds(60)) { url in
            opened.withLock { $0 = url }
            // The browser gets the loopback address, which redirects it to the URL.
            Self.openInTestBrowser(OAuthClient.startURI(forAuthorizationURL: url) ?? url)
        }, client: client)
        #expect(result.user.id == (try server.userID))
        #expect(result.user.signInMethod == "browser")
        #expect(result.migration.moved == ["draft"])
        let url = try #require(opened.withLock { $0 })
        let query = URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems ?? []
        #expect(query.first { $0.name == "code_challenge_method" }?.value == "S256")
        #expect(query.first { $0.name == "scope" }?.value == "openid read")
        #expect(query.first { $0.name == "redirect_uri" }?.value?.hasPrefix("http://127.0.0.1:") == true)
        #expect((query.first { $0.name == "state" }?.value?.count ?? 0) >= 32)
        let start = try #require(OAuthClient.startURI(forAuthorizationURL: url))
        #expect(start.absoluteString.hasPrefix("http://127.0.0.1:") && start.path == "/signin" && start.query == nil)
        // The stored refresh token works, and the refresh answer's ID token is verified too
        // (OIDC Core §12.2: same iss, sub, aud).
        let stored = try #require(await session.restore().credentials?.refreshToken)
        let refreshed = try await client.refresh(stored)
        let idToken = try #require(refreshed.idToken)
        #expect(try await client.verifyIDToken(idToken).subject == (try server.userID))
    }

    @Test("each attempt has its own state, nonce and verifier; a denied sign-in leaves the guest a guest")
    func deniedAndFresh() async throws {
        let server = try OAuthServer.require()
        let client = try client(server)
        let folder = try SessionFolder()
        defer { folder.cleanUp() }
        let session = try folder.session()
        _ = await session.restore()
        let urls = Mutex<[URL]>([])
        for _ in 0..<2 {
            let error = await #expect(throws: OAuthError.self) {
                try await session.signIn(using: .browser(wait: .seconds(60)) { url in
                    urls.withLock { $0.append(url) }
                    Self.openInTestBrowser(url, modes: "deny")
                }, client: client)
            }
            #expect(error?.kind == .accessDenied)
        }
        #expect(await session.restore().name == "guest")
        let values = urls.withLock { $0 }.map { url in
            Dictionary(uniqueKeysWithValues: (URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems ?? []).map { ($0.name, $0.value ?? "") })
        }
        #expect(values.count == 2)
        for name in ["state", "nonce", "code_challenge"] {
            #expect(values[0][name] != values[1][name], "\(name) repeated")
        }
    }
}
