import CredentialVault
@testable import CredentialVaultOAuth
import Foundation
import NIOHTTP1
import Synchronization
import Testing
import VaultCrypto

/// The parts that need no server: classification, sanitising, backoff, TLS rules, encoding.
@Suite("OAuth client without a server")
struct OAuthClientUnitTests {
    func response(_ status: Int, _ body: String, retryAfter: String? = nil) -> HTTPExchange {
        var headers = HTTPHeaders()
        if let retryAfter { headers.add(name: "Retry-After", value: retryAfter) }
        return HTTPExchange(status: status, headers: headers, body: Array(body.utf8))
    }

    /// Issue 26, bug 5: a client that goes out of scope without `shutdown()` must not trap (this
    /// debug test process would die of AsyncHTTPClient's "not shut down before the deinit").
    @Test func aClientDroppedWithoutShutdownIsSafe() throws {
        for _ in 0..<3 {
            let client = try OAuthClient(configuration: OAuthConfiguration(issuer: URL(string: "https://id.example"), clientID: "c"))
            #expect(client.configuration.clientID == "c")
        }
    }

    /// Issue 26, bug 2: the session's waiters wait for a refresh as long as it can take.
    @Test func theRefreshBudgetCoversEveryAttemptAndWait() {
        let defaults = OAuthConfiguration(issuer: URL(string: "https://id.example"), clientID: "c")
        #expect(defaults.refreshBudget == .seconds(95), "3 × 10 s + 2 × 30 s (Retry-After cap) + 5 s")
        let quick = OAuthConfiguration(issuer: URL(string: "https://id.example"), clientID: "c", requestTimeout: .seconds(2),
                                       retry: RetryPolicy(maximumAttempts: 2, maximumDelay: .seconds(4), maximumRetryAfter: .seconds(1)))
        #expect(quick.refreshBudget == .seconds(2 * 2 + 4 + 5))
        #expect(quick.refreshBudget > quick.requestTimeout, "longer than one exchange: waiters outlast the refresh")
    }

    /// Headers made at the last moment (a DPoP proof) that cannot be made: the error comes out as
    /// it is, at the first attempt, never as a retried transport failure (nothing was sent).
    @Test func aProofThatCannotBeMadeIsThrownAsItIsAndNotRetried() async throws {
        struct ProofFailed: Error {}
        let attempts = Mutex(0)
        let client = try OAuthClient(configuration: OAuthConfiguration(
            issuer: nil, endpoints: OAuthEndpoints(token: URL(string: "http://127.0.0.1:9/token")), clientID: "c",
            retry: RetryPolicy(maximumAttempts: 3, baseDelay: .milliseconds(1))))
        let url = try #require(URL(string: "http://127.0.0.1:9/userinfo"))
        await #expect(throws: ProofFailed.self) {
            _ = try await client.exchange(url, name: "userinfo endpoint", method: .GET, headers: [:], body: nil, retry: .idempotent,
                                          perAttempt: {
                                              attempts.withLock { $0 += 1 }
                                              throw ProofFailed()
                                          })
        }
        #expect(attempts.withLock { $0 } == 1)
    }

    @Test("RFC 6749 §5.2 classification", arguments: [
        ("invalid_grant", OAuthError.Kind.invalidGrant), ("invalid_client", .configuration),
        ("unauthorized_client", .configuration), ("unsupported_grant_type", .configuration),
        ("invalid_scope", .configuration), ("access_denied", .accessDenied), ("expired_token", .expiredToken),
        ("authorization_pending", .transient), ("slow_down", .transient),
    ])
    func classification(code: String, kind: OAuthError.Kind) {
        let error = OAuthClient.classify(response(400, #"{"error":"\#(code)"}"#), endpoint: "token endpoint x")
        #expect(error.kind == kind)
        #expect(error.serverError == code)
    }

    @Test("5xx and 429 are transient and carry Retry-After; a 4xx without an OAuth error is configuration; redirects are refused")
    func statusClassification() {
        #expect(OAuthClient.classify(response(503, "down", retryAfter: "7"), endpoint: "e").kind == .transient)
        #expect(OAuthClient.classify(response(503, "down", retryAfter: "7"), endpoint: "e").retryAfter == .seconds(7))
        #expect(OAuthClient.classify(response(429, "{}"), endpoint: "e").kind == .transient)
        #expect(OAuthClient.classify(response(404, "<html>"), endpoint: "e").kind == .configuration)
        #expect(OAuthClient.classify(response(302, ""), endpoint: "e").kind == .configuration)
    }

    @Test("server text loses control characters and is bounded; the description names the endpoint")
    func sanitised() {
        let error = OAuthClient.classify(
            response(400, #"{"error":"invalid_grant","error_description":"bad\u001b]0;owned\u0007\nline\u202Eevil"}"#),
            endpoint: "token endpoint https://id.example/token")
        #expect(error.serverErrorDescription == "bad\\u{1b}]0;owned\\u{7}\\u{a}line\\u{202e}evil")
        #expect(error.description.hasPrefix("token endpoint https://id.example/token: invalid_grant: bad"))
        #expect(!error.description.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x202E })
        let long = ServerText.sanitized(String(repeating: "x", count: 1000))
        #expect(long.count == ServerText.maximumLength + 1)
    }

    @Test("a malformed 200 is transient and the message holds no token")
    func malformedSuccess() throws {
        let body = #"{"access_token":"SECRET-ACCESS","token_type":""}"#
        let error = try #require(throws: OAuthError.self) {
            try OAuthClient.credentials(from: response(200, body), endpoint: "token endpoint e")
        }
        #expect(error.kind == .transient)
        #expect(!error.description.contains("SECRET-ACCESS"))
    }

    @Test("backoff: exponential with jitter, capped; Retry-After wins and is capped")
    func backoff() {
        let policy = RetryPolicy(maximumAttempts: 5, baseDelay: .milliseconds(100), maximumDelay: .milliseconds(300),
                                 maximumRetryAfter: .seconds(2))
        for _ in 0..<50 {
            #expect(policy.delay(afterAttempt: 1, retryAfter: nil) <= .milliseconds(100))
            #expect(policy.delay(afterAttempt: 2, retryAfter: nil) <= .milliseconds(200))
            #expect(policy.delay(afterAttempt: 9, retryAfter: nil) <= .milliseconds(300))
        }
        let delays = Set((0..<50).map { _ in policy.delay(afterAttempt: 3, retryAfter: nil) })
        #expect(delays.count > 1)   // jitter
        #expect(policy.delay(afterAttempt: 1, retryAfter: .seconds(1)) == .seconds(1))
        #expect(policy.delay(afterAttempt: 1, retryAfter: .seconds(60)) == .seconds(2))
        #expect(RetryPolicy.retryAfter("120") == .seconds(120))
        #expect(RetryPolicy.retryAfter("soon") == nil)
        let now = Date(timeIntervalSince1970: 1_445_412_480)   // Wed, 21 Oct 2015 07:28:00 GMT
        #expect(RetryPolicy.retryAfter("Wed, 21 Oct 2015 07:28:30 GMT", now: now) == .seconds(30))
    }

    @Test("https is required except for loopback")
    func tlsRules() {
        #expect(OAuthConfiguration.isAcceptable(URL(string: "https://id.example/o")!, allowInsecure: false))
        #expect(OAuthConfiguration.isAcceptable(URL(string: "http://127.0.0.1:8000/o")!, allowInsecure: false))
        #expect(OAuthConfiguration.isAcceptable(URL(string: "http://[::1]:8000/o")!, allowInsecure: false))
        #expect(OAuthConfiguration.isAcceptable(URL(string: "http://localhost/o")!, allowInsecure: false))
        #expect(!OAuthConfiguration.isAcceptable(URL(string: "http://id.example/o")!, allowInsecure: false))
        #expect(!OAuthConfiguration.isAcceptable(URL(string: "http://127.0.0.1.evil.example/o")!, allowInsecure: false))
        #expect(!OAuthConfiguration.isAcceptable(URL(string: "ftp://id.example/o")!, allowInsecure: false))
        let error = #expect(throws: OAuthError.self) {
            try OAuthClient(configuration: OAuthConfiguration(issuer: URL(string: "http://id.example"), clientID: "c"))
        }
        #expect(error?.kind == .insecureEndpoint)
        let missing = #expect(throws: OAuthError.self) {
            try OAuthClient(configuration: OAuthConfiguration(issuer: URL(string: "https://id.example"), clientID: "c",
                                                              caBundlePath: "/nonexistent/ca.pem"))
        }
        #expect(missing?.kind == .configuration)
    }

    @Test("CA roots given as PEM bytes: trusted as given (no second read by path); bytes with no certificate are a configuration error")
    func caBundleBytes() throws {
        var garbage = OAuthConfiguration(issuer: URL(string: "https://id.example"), clientID: "c")
        garbage.caBundlePEM = Array("not a certificate".utf8)
        let refused = #expect(throws: OAuthError.self) { try OAuthClient(configuration: garbage) }
        #expect(refused?.kind == .configuration)
        let system = "/etc/ssl/certs/ca-certificates.crt"
        guard let bytes = FileManager.default.contents(atPath: system) else { return }
        var real = OAuthConfiguration(issuer: URL(string: "https://id.example"), clientID: "c", caBundlePath: "/nonexistent/ca.pem")
        real.caBundlePEM = Array(bytes)
        _ = try OAuthClient(configuration: real)   // the bytes win over a path that no longer exists
    }

    @Test("form and Basic encoding (RFC 6749 §2.3.1, Appendix B)")
    func encoding() {
        var form = FormBody()
        form.append("grant_type", "refresh_token")
        form.append("refresh_token", secret: secret("a b+c/é"))
        let text = String(decoding: form.buffer.readableBytesView, as: UTF8.self)
        #expect(text == "grant_type=refresh_token&refresh_token=a%20b%2Bc%2F%C3%A9")
        // "client:id" / "s:e" → "client%3Aid:s%3Ae"
        #expect(FormBody.basicCredentials(clientID: "client:id", secret: secret("s:e"))
                == "Basic " + Data("client%3Aid:s%3Ae".utf8).base64EncodedString())
    }

    /// Plain http is allowed to loopback only, judged from the host as an IP literal: a host that
    /// merely looks like 127.x is refused before anything is sent, and `localhost` is sent to
    /// 127.0.0.1 without a name lookup.
    @Test func plainHTTPOnlyToAStrictLoopbackLiteral() throws {
        for text in ["http://127.0.0.08/token", "http://127.1/token", "http://127.db.example/token", "http://[::ffff:127.0.0.1]/token"] {
            let url = try #require(URL(string: text))
            #expect(!OAuthConfiguration.isAcceptable(url, allowInsecure: false), "\(text)")
            let error = #expect(throws: OAuthError.self) {
                _ = try OAuthClient(configuration: OAuthConfiguration(issuer: nil, endpoints: OAuthEndpoints(token: url), clientID: "app"))
            }
            #expect(error?.kind == .insecureEndpoint, "\(text)")
        }
        for text in ["http://127.0.0.1:8000/token", "http://localhost/token", "http://[::1]:9/token", "https://auth.example.com/token"] {
            #expect(OAuthConfiguration.isAcceptable(try #require(URL(string: text)), allowInsecure: false), "\(text)")
        }
        #expect(HTTPTransport.connectable(try #require(URL(string: "http://localhost:8000/o/token/"))).absoluteString
                == "http://127.0.0.1:8000/o/token/")
        #expect(HTTPTransport.connectable(try #require(URL(string: "https://localhost/token"))).absoluteString == "https://localhost/token",
                "https keeps its name: the certificate is checked against it")
    }
}

func secret(_ text: String) -> SecureBytes { SecureBytes(copying: Array(text.utf8)) }
