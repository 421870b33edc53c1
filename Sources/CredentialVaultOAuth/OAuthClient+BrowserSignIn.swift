import CredentialVault
import FoundationEssentials
import NIOCore
import VaultCrypto

/// What a browser sign-in produced: tokens, and who the user is when the server said.
public struct BrowserSignIn: Sendable {
    /// The tokens from the code exchange.
    public let credentials: Credentials
    /// The verified ID token, when the server sent one.
    public let identity: VerifiedIDToken?
}

extension OAuthClient {
    /// Signs the user in through their browser: authorization code with PKCE (RFC 7636, S256)
    /// and a loopback redirect (RFC 8252 §7.3), as AppAuth does.
    ///
    /// A listener on 127.0.0.1 (`port`, or an ephemeral one) waits for `/callback`; `open` is
    /// given the authorization URL (show it, start the browser, return at once). Start the browser
    /// with `http://127.0.0.1:PORT/signin` instead (`startURI(forAuthorizationURL:)`): it redirects
    /// there, and the URL's `state`, `nonce` and challenge then never appear in a process's
    /// arguments. The listener answers only this user's processes (403 to another uid). A callback
    /// with a wrong or missing `state` gets 400 and the wait goes on; the first with the right
    /// one decides: its `iss` (RFC 9207) must be the issuer, an `error` ends the sign-in, a
    /// `code` is exchanged with the verifier, and the ID token is verified with the `nonce`.
    /// The browser's page says whether it worked; it never shows a code or token.
    /// - Parameters:
    ///   - port: the port to listen on; nil for an ephemeral one.
    ///   - wait: how long to wait for the callback.
    ///   - open: shows or opens the URL.
    /// - Returns: the tokens and the verified identity.
    /// - Throws: `LoopbackRedirectError` (`.portUnavailable`, `.noCallback`); `OAuthError`
    ///   (`.accessDenied` and `.configuration` for an `error=` answer, `.verificationFailed` for a
    ///   refused `iss` or ID token, the token endpoint's errors).
    public func signInWithBrowser(port: Int? = nil, wait: Duration = .seconds(300),
                                  open: @Sendable (URL) async -> Void) async throws -> BrowserSignIn {
        let metadata = try await metadata()
        let authorizationEndpoint = try await endpoint(\.authorization, "authorization endpoint")
        let tokenEndpoint = try await endpoint(\.token, "token endpoint")
        let listener = try LoopbackRedirectListener(port: port ?? 0)
        let state = Base64URL.encode(try SecureRandom.bytes(count: 24))
        let nonce = Base64URL.encode(try SecureRandom.bytes(count: 24))
        let verifier = SecureBytes(copying: Array(Base64URL.encode(try SecureRandom.bytes(count: 32)).utf8))
        let challenge = Base64URL.encode(try verifier.withUnsafeBytes { try SHA256.hash($0) })

        var scopes = configuration.scopes
        if metadata.scopes.contains("openid") || metadata.endpoints.jwks != nil, !scopes.contains("openid") {
            scopes.insert("openid", at: 0)
        }
        var query = FormBody()
        query.append("response_type", "code")
        query.append("client_id", configuration.clientID)
        query.append("redirect_uri", listener.redirectURI)
        if !scopes.isEmpty { query.append("scope", scopes.joined(separator: " ")) }
        query.append("state", state)
        query.append("nonce", nonce)
        query.append("code_challenge", challenge)
        query.append("code_challenge_method", "S256")
        let separator = authorizationEndpoint.query == nil ? "?" : "&"
        guard let url = URL(string: authorizationEndpoint.absoluteString + separator + query.text) else {
            throw OAuthError(.configuration, endpoint: "authorization endpoint", detail: "the authorization URL cannot be built")
        }
        await open(url)

        let deadline = ContinuousClock.now + wait
        let callback = try await withTaskCancellationHandler {
            try await BlockingWork.run { try listener.waitForCallback(state: state, authorizationURL: url.absoluteString, until: deadline) }
        } onCancel: {
            listener.cancel()
        }
        do {
            let result = try await complete(callback.parameters, metadata: metadata, tokenEndpoint: tokenEndpoint,
                                            redirectURI: listener.redirectURI, verifier: verifier, nonce: nonce)
            LoopbackRedirectListener.finish(callback, succeeded: true, message: "Signed in. You can close this window.")
            return result
        } catch {
            LoopbackRedirectListener.finish(callback, succeeded: false,
                                            message: "The sign-in did not complete. Return to the application for details.")
            throw error
        }
    }

    /// The address to start the browser with for the sign-in whose authorization URL `open` was
    /// given: `http://127.0.0.1:PORT/signin`, which redirects this user's browser (and no other
    /// user's process) to the authorization URL, so that its `state`, `nonce` and challenge never
    /// sit in the browser process's arguments, which every local user can read.
    /// - Parameter authorizationURL: the URL `signInWithBrowser` (or `.browser(open:)`) gave `open`.
    /// - Returns: nil for a URL whose `redirect_uri` is not a loopback listener's.
    public static func startURI(forAuthorizationURL authorizationURL: URL) -> URL? {
        LoopbackRedirectListener.startURI(forAuthorizationURL: authorizationURL.absoluteString).flatMap { URL(string: $0) }
    }

    /// Checks the authorization response, exchanges the code and verifies the ID token.
    private func complete(_ parameters: [String: String], metadata: ServerMetadata, tokenEndpoint: URL, redirectURI: String,
                          verifier: SecureBytes, nonce: String) async throws -> BrowserSignIn {
        let name = "authorization response"
        // RFC 9207: when the server sends iss (or says it does), it must be this issuer (mix-up defence).
        if let issuer = parameters["iss"] {
            guard issuer == metadata.issuer else {
                throw OAuthError(.verificationFailed, endpoint: name,
                                 detail: "refused: it names issuer '\(ServerText.sanitized(String(issuer.prefix(100))))', not "
                                     + "'\(ServerText.sanitized(metadata.issuer))' (a mix-up; RFC 9207)")
            }
        } else if metadata.issuerInAuthorizationResponse {
            throw OAuthError(.verificationFailed, endpoint: name,
                             detail: "refused: the server promises an iss parameter (RFC 9207) and this response has none")
        }
        if let error = parameters["error"] {
            throw OAuthError(error == "access_denied" ? .accessDenied : .configuration, endpoint: name, serverError: error,
                             serverErrorDescription: parameters["error_description"], detail: "the server refused")
        }
        guard let code = parameters["code"], !code.isEmpty else {
            throw OAuthError(.verificationFailed, endpoint: name, detail: "refused: it has neither a code nor an error")
        }
        var form = FormBody()
        form.append("grant_type", "authorization_code")
        form.append("code", secret: SecureBytes(copying: Array(code.utf8)))
        form.append("redirect_uri", redirectURI)
        form.append("code_verifier", secret: verifier)
        let response: HTTPExchange
        do {
            response = try await post(tokenEndpoint, name: "token endpoint", form: form, retry: .onlyIfNotProcessed)
        } catch let error as OAuthError where error.kind == .invalidGrant {
            // A refused code (used before, expired, or not this client's) ends this sign-in only;
            // no session's grant died.
            throw OAuthError(.verificationFailed, endpoint: error.endpoint, status: error.status, serverError: error.serverError,
                             serverErrorDescription: error.serverErrorDescription,
                             detail: "the authorization code was refused (used before, expired, or not issued to this client)")
        }
        let credentials = try Self.credentials(from: response, endpoint: "token endpoint \(Self.display(tokenEndpoint))")
        do {
            let identity = try await verifiedIdentity(of: credentials, nonce: nonce)
            return BrowserSignIn(credentials: credentials, identity: identity)
        } catch {
            // Tokens that came with a refused ID token are not kept, and not left alive either.
            _ = await revokeAll(credentials)
            throw error
        }
    }
}
