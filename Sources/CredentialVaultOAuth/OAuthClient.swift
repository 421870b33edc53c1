import CredentialVault
import FoundationEssentials
import NIOCore
import NIOHTTP1
import Synchronization
import VaultCrypto

/// An OAuth 2.0 client for one authorization server: refresh (RFC 6749 §6), revocation
/// (RFC 7009), discovery (OIDC / RFC 8414), device sign-in (RFC 8628) and client
/// credentials (RFC 6749 §4.4).
///
/// Plug it into a session with `SessionManager.validCredentials(minTTL:client:)`: the
/// session's single-flight refresh and atomic save are used as they are. It may simply go out of
/// scope: its HTTP client is shared by every `OAuthClient` of the process that trusts the same
/// roots and lives as long as the process, so nothing needs shutting down.
public final class OAuthClient: Sendable {
    /// The configuration it was made with.
    public let configuration: OAuthConfiguration
    let transport: HTTPTransport
    private let discovered = Mutex<ServerMetadata?>(nil)
    /// The issuer's JWK Set as last fetched (`OAuthClient+IDToken.swift`).
    let fetchedKeys = Mutex<JSONWebKeySet?>(nil)
    /// The authorization server's latest `DPoP-Nonce` (RFC 9449 §8), sent in the next proofs.
    let dpopNonce = Mutex<String?>(nil)

    /// Creates a client.
    /// - Throws: `OAuthError` `.configuration` when the CA bundle cannot be read; `.insecureEndpoint`
    ///   when the issuer or a configured endpoint is plain http to a non-loopback host.
    public init(configuration: OAuthConfiguration) throws {
        self.configuration = configuration
        if configuration.caBundlePEM == nil, let path = configuration.caBundlePath, !FileManager.default.isReadableFile(atPath: path) {
            throw OAuthError(.configuration, endpoint: "CA bundle", detail: "cannot read the CA bundle '\(ServerText.sanitized(path))'")
        }
        let named: [(String, URL?)] = [("issuer", configuration.issuer), ("token endpoint", configuration.endpoints.token),
                                       ("revocation endpoint", configuration.endpoints.revocation),
                                       ("device authorization endpoint", configuration.endpoints.deviceAuthorization),
                                       ("userinfo endpoint", configuration.endpoints.userinfo),
                                       ("authorization endpoint", configuration.endpoints.authorization),
                                       ("JWKS", configuration.endpoints.jwks)]
        for case let (name, url?) in named where !OAuthConfiguration.isAcceptable(url, allowInsecure: configuration.allowInsecureHTTP) {
            throw OAuthError(.insecureEndpoint, endpoint: "\(name) \(Self.display(url))",
                             detail: "https is required (plain http only to a loopback address)")
        }
        transport = try HTTPTransport(caBundlePath: configuration.caBundlePath, caBundlePEM: configuration.caBundlePEM)
    }

    /// Kept for compatibility; does nothing (the HTTP client is shared and lives with the process).
    public func shutdown() async throws {
        try await transport.shutdown()
    }

    // MARK: Endpoints

    /// The endpoint for `keyPath`: the configured one, else the discovered one.
    func endpoint(_ keyPath: KeyPath<OAuthEndpoints, URL?>, _ name: String) async throws -> URL {
        if let url = configuration.endpoints[keyPath: keyPath] { return url }
        guard configuration.issuer != nil else {
            throw OAuthError(.configuration, endpoint: name, detail: "no \(name) is configured and there is no issuer to discover it from")
        }
        guard let url = try await metadata().endpoints[keyPath: keyPath] else {
            throw OAuthError(.configuration, endpoint: name, detail: "the server's metadata lists no \(name)")
        }
        guard OAuthConfiguration.isAcceptable(url, allowInsecure: configuration.allowInsecureHTTP) else {
            throw OAuthError(.insecureEndpoint, endpoint: "\(name) \(Self.display(url))",
                             detail: "https is required (plain http only to a loopback address)")
        }
        return url
    }

    /// The endpoint if there is one (configured or discovered), else nil.
    func optionalEndpoint(_ keyPath: KeyPath<OAuthEndpoints, URL?>, _ name: String) async throws -> URL? {
        do {
            return try await endpoint(keyPath, name)
        } catch let error as OAuthError where error.kind == .configuration && error.status == nil {
            return nil
        }
    }

    /// The server's metadata, fetched once per client and then cached.
    public func metadata() async throws -> ServerMetadata {
        if let cached = discovered.withLock({ $0 }) { return cached }
        let fetched = try await discover()
        discovered.withLock { $0 = fetched }
        return fetched
    }

    /// "token endpoint http://127.0.0.1:8000/o/token/" without query or user info.
    static func display(_ url: URL) -> String {
        var text = (url.scheme ?? "?") + "://" + (url.host ?? "?")
        if let port = url.port { text += ":\(port)" }
        let path = URLComponents(url: url, resolvingAgainstBaseURL: false)?.percentEncodedPath ?? url.path
        return ServerText.sanitized(text + path)
    }

    // MARK: The exchange

    /// How a request may be retried.
    enum Retry {
        /// Safe to send again whatever happened (revocation, discovery, client credentials).
        case idempotent
        /// Send again only when the server surely did not act (refused connection, 5xx, 429).
        case onlyIfNotProcessed
        /// Sent once: the caller decides when to ask again (device polling, RFC 8628 §3.5).
        case never
    }

    /// POSTs a form with the client's authentication, retrying transient failures per policy.
    /// - Returns: the 2xx response.
    /// - Throws: `OAuthError`, classified.
    func post(_ url: URL, name: String, form: FormBody, retry: Retry) async throws -> HTTPExchange {
        var form = form
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        switch configuration.authentication {
        case .none:
            form.append("client_id", configuration.clientID)
        case .clientSecretPost(let secret):
            form.append("client_id", configuration.clientID)
            form.append("client_secret", secret: secret)
        case .clientSecretBasic(let secret):
            headers.add(name: "Authorization", value: FormBody.basicCredentials(clientID: configuration.clientID, secret: secret))
        }
        guard let key = configuration.dpopKey, name == "token endpoint" else {
            return try await exchange(url, name: name, method: .POST, headers: headers, body: form.buffer, retry: retry)
        }
        // DPoP (RFC 9449 §5): a fresh proof for every attempt; a `use_dpop_nonce` answer is met
        // by one more request with the nonce the server just sent (§8).
        let proof = dpopProof(key: key, method: "POST", url: url)
        let sentNonce = dpopNonce.withLock { $0 }
        do {
            return try await exchange(url, name: name, method: .POST, headers: headers, body: form.buffer, retry: retry,
                                      perAttempt: proof)
        } catch let error as OAuthError where error.serverError == "use_dpop_nonce" && dpopNonce.withLock({ $0 }) != sentNonce {
            return try await exchange(url, name: name, method: .POST, headers: headers, body: form.buffer, retry: retry,
                                      perAttempt: proof)
        }
    }

    /// The `DPoP` header for each attempt of one request: a fresh proof (new `jti`, current `iat`,
    /// the latest server nonce), made in the task that sends it (`HTTPTransport.send`).
    func dpopProof(key: P256SigningKey, method: String, url: URL, accessToken: SecureBytes? = nil) -> @Sendable () throws -> HTTPHeaders {
        { [self] in
            var extra = HTTPHeaders()
            extra.add(name: "DPoP", value: try DPoPProof.make(key: key, method: method, url: url, accessToken: accessToken,
                                                             nonce: dpopNonce.withLock { $0 }))
            return extra
        }
    }

    /// The instant by which every exchange of the operation in progress must end (a refresh's
    /// `refreshDeadline`), nil for none: each attempt's deadline is cut to it, and no retry
    /// waits past it.
    @TaskLocal static var overallDeadline: ContinuousClock.Instant?

    /// Runs `body` with every exchange it makes ending within `duration` from now (or by an
    /// earlier overall deadline already set).
    func withinDeadline<Value>(_ duration: Duration, _ body: () async throws -> Value) async throws -> Value {
        let deadline = ContinuousClock.now + duration
        return try await Self.$overallDeadline.withValue(Self.overallDeadline.map { min($0, deadline) } ?? deadline) {
            try await body()
        }
    }

    /// One request with bounded retries. 2xx comes back; everything else is thrown classified.
    /// Within an overall deadline (`withinDeadline`) the attempts are cut to it.
    func exchange(_ url: URL, name: String, method: HTTPMethod, headers: HTTPHeaders, body: ByteBuffer?,
                  retry: Retry, perAttempt: (@Sendable () throws -> HTTPHeaders)? = nil) async throws -> HTTPExchange {
        let endpoint = "\(name) \(Self.display(url))"
        let deadline = Self.overallDeadline
        var attempt = 0
        while true {
            attempt += 1
            var timeout = configuration.requestTimeout
            if let deadline {
                let remaining = deadline - .now
                guard remaining > .zero else {
                    throw OAuthError(.transient, endpoint: endpoint, detail: "the time allowed for the whole operation ran out before this request")
                }
                timeout = min(timeout, remaining)
            }
            let failure: OAuthError
            let mayRetry: Bool
            do {
                let response = try await transport.send(url, method: method, headers: headers, body: body,
                                                        timeout: timeout, lastMoment: perAttempt)
                if name == "token endpoint", let nonce = response.headers.first(name: "DPoP-Nonce"), !nonce.isEmpty,
                   nonce.utf8.count <= 1024, nonce.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) {
                    dpopNonce.withLock { $0 = nonce }
                }
                if (200..<300).contains(response.status) { return response }
                failure = Self.classify(response, endpoint: endpoint)
                // `authorization_pending` and `slow_down` are answers of the device grant, not
                // failures: the poller waits its interval before asking again (RFC 8628 §3.5).
                mayRetry = failure.kind == .transient && !Self.isPollingAnswer(failure.serverError)
            } catch let failure as HTTPTransport.LastMomentFailure {
                throw failure.underlying
            } catch {
                let (classified, beforeSending) = Self.classify(transportError: error, endpoint: endpoint)
                failure = classified
                mayRetry = beforeSending || retry == .idempotent
            }
            guard mayRetry, retry != .never, attempt < configuration.retry.maximumAttempts,
                  failure.retryAfter.map({ $0 <= configuration.retry.maximumRetryAfter }) ?? true else { throw failure }
            let delay = configuration.retry.delay(afterAttempt: attempt, retryAfter: failure.retryAfter)
            if let deadline, ContinuousClock.now + delay >= deadline { throw failure }
            try await Task.sleep(for: delay)
        }
    }

    /// The device grant's "ask again later" answers (RFC 8628 §3.5), never retried at once.
    static func isPollingAnswer(_ serverError: String?) -> Bool {
        serverError == "authorization_pending" || serverError == "slow_down"
    }

    /// Classifies a non-2xx response (RFC 6749 §5.2).
    static func classify(_ response: HTTPExchange, endpoint: String) -> OAuthError {
        let retryAfter = RetryPolicy.retryAfter(response.headers.first(name: "Retry-After"))
        let oauth = TokenResponse.parseError(response.body)
        let status = response.status
        if status >= 500 || status == 429 {
            return OAuthError(.transient, endpoint: endpoint, status: status, serverError: oauth?.error,
                              serverErrorDescription: oauth?.errorDescription,
                              detail: "the server answered HTTP \(status)", retryAfter: retryAfter)
        }
        if (300..<400).contains(status) {
            return OAuthError(.configuration, endpoint: endpoint, status: status,
                              detail: "the server redirected; redirects are not followed with credentials")
        }
        guard let oauth else {
            return OAuthError(.configuration, endpoint: endpoint, status: status,
                              detail: "the server answered HTTP \(status) without an OAuth error")
        }
        let kind: OAuthError.Kind
        switch oauth.error {
        case "invalid_grant": kind = .invalidGrant
        case "access_denied": kind = .accessDenied
        case "expired_token": kind = .expiredToken
        case "authorization_pending", "slow_down", "temporarily_unavailable": kind = .transient
        default: kind = .configuration
        }
        return OAuthError(kind, endpoint: endpoint, status: status, serverError: oauth.error,
                          serverErrorDescription: oauth.errorDescription, detail: "the server refused", retryAfter: retryAfter)
    }

    /// Transport failures are transient. The flag says whether the request surely never
    /// reached the server (so even a refresh may be sent again). Matched on the HTTP client's
    /// error values (`HTTPClientError`, NIO's connection and I/O errors), never on their text.
    static func classify(transportError error: any Error, endpoint: String) -> (OAuthError, beforeSending: Bool) {
        let text = ServerText.sanitized(String(describing: error))
        func failure(_ detail: String) -> OAuthError { OAuthError(.transient, endpoint: endpoint, detail: "\(detail) (\(text))") }
        switch TransportFailure(error) {
        case .noAnswerInTime: return (failure("no answer within the deadline"), false)
        case .connectTimeout: return (failure("could not connect within the deadline"), true)
        case .couldNotConnect: return (failure("could not connect"), true)
        case .brokenExchange: return (failure("the exchange failed"), false)
        case .other: return (failure("the exchange failed"), true)
        }
    }

    /// Reads a token endpoint's 2xx body; a body that is not a token response is transient.
    static func credentials(from response: HTTPExchange, endpoint: String) throws -> Credentials {
        do {
            return try TokenResponse.parse(response.body, receivedAt: Date())
        } catch let error as VaultError {
            throw OAuthError(.transient, endpoint: endpoint, status: response.status,
                             detail: "the answer is not a token response: \(error.message)")
        }
    }
}
