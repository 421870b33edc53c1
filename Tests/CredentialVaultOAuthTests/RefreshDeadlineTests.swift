#if canImport(Glibc)
import Glibc
#endif
import CredentialVault
@testable import CredentialVaultOAuth
import Foundation
import OAuthServerSupport
import Synchronization
import Testing
import TestScheduling
import VaultCrypto

/// Review finding F6: a refresh in a fresh process runs discovery, the token request and the JWKS
/// fetch under the session lock, each with its own retries, while a launch waiting for it allows
/// one request's budget (`refreshBudget`). The refresh as a whole now ends within
/// `refreshDeadline`, so a waiter never gives up (`busy`) on a refresh that is still going on.
@Suite("The refresh and its waiters share one budget")
struct RefreshDeadlineTests {
    @Test("the refresh budget is the refresh's deadline and 5 s for saving")
    func budgetAndDeadline() {
        let configuration = OAuthConfiguration(issuer: nil, clientID: "c", requestTimeout: .seconds(3),
                                               retry: RetryPolicy(maximumAttempts: 2, maximumDelay: .milliseconds(200),
                                                                  maximumRetryAfter: .milliseconds(200)))
        #expect(configuration.refreshDeadline == .milliseconds(6200))
        #expect(configuration.refreshBudget == configuration.refreshDeadline + .seconds(5))
    }

    @Suite(.timing, .serialized)
    struct Timed {
        @Test("with slow discovery and JWKS the refresh ends within the budget: a launch waiting for it gets the outcome, never busy")
        func slowDiscoveryAndJWKS() async throws {
            // Every answer takes 2.6 s, under the 3 s request deadline: discovery (three documents,
            // the first lacks a revocation endpoint), the token request and the JWKS would take 13 s
            // together, more than the waiters' 11.2 s (2 × 3 s + 0.2 s + 5 s).
            let issuer = try SlowIssuer(delay: .milliseconds(2600))
            defer { issuer.stop() }
            let client = try OAuthClient(configuration: OAuthConfiguration(
                issuer: URL(string: "http://127.0.0.1:\(issuer.port)/o"), clientID: "c", requestTimeout: .seconds(3),
                retry: RetryPolicy(maximumAttempts: 2, baseDelay: .milliseconds(100), maximumDelay: .milliseconds(200),
                                   maximumRetryAfter: .milliseconds(200))))
            #expect(client.configuration.refreshBudget == .milliseconds(11200))
            let folder = try SessionFolder()
            defer { folder.cleanUp() }
            let configuration = SessionConfiguration(lockTimeout: .milliseconds(300))
            let key = try VaultKey.fromKeyFile(path: folder.keyPath)
            let refresher = SessionManager(directory: folder.path + "/vault", key: key, configuration: configuration)
            let launcher = SessionManager(directory: folder.path + "/vault", key: key, configuration: configuration)
            _ = await refresher.restore()
            try await refresher.signIn(user: User(id: "u1", onboardingComplete: true), credentials: Credentials(
                accessToken: SecureBytes(copying: Array("access-1".utf8)), refreshToken: SecureBytes(copying: Array("refresh-1".utf8)),
                expiresAt: Date().addingTimeInterval(-60)))
            let refreshing = Task { try await refresher.validCredentials(client: client) }
            defer { refreshing.cancel() }
            // The launch starts once the refresh's journal is on disk (polled, bounded).
            let profiles = ProfileStore(directory: folder.path + "/vault")
            var journalWritten = false
            for _ in 0..<500 where !journalWritten {
                journalWritten = (try? profiles.load()?.refreshInFlight) != nil
                if !journalWritten { try await Task.sleep(for: .milliseconds(10)) }
            }
            try #require(journalWritten)
            let launched = await launcher.restore(minTTL: .zero, refreshLockWait: client.configuration.refreshBudget)
            let refreshed = await refreshing.result
            if case .unavailable(let why) = launched {
                Issue.record("the launch gave up on a refresh still in flight: \(why)")
            }
            // The refresh ran out of time in discovery: a transient failure, the token endpoint never asked.
            #expect(throws: OAuthError.self) { try refreshed.get() }
            if case .failure(let error as OAuthError) = refreshed { #expect(error.isTransient, "\(error)") }
            #expect(issuer.requests("/o/token") == 0)
            guard case .expired(let user, let hasRefreshToken, _) = launched else {
                Issue.record("expected the old, expired tokens kept: \(launched)")
                return
            }
            #expect(user.id == "u1" && hasRefreshToken)
        }
    }
}

/// An issuer on 127.0.0.1 whose every answer takes `delay`: metadata without a revocation
/// endpoint (so discovery reads all three documents), a token answer with an ID token naming key
/// `k1`, and an empty JWKS. A thread per connection; the listener closes at `stop()`.
final class SlowIssuer: Sendable {
    let port: UInt16
    private let listener: Int32
    private let counts = Mutex<[String: Int]>([:])

    init(delay: Duration) throws {
        let (fd, port) = try LoopbackPeerTests.listener()
        listener = fd
        self.port = port
        let seconds = Double(delay.components.seconds) + Double(delay.components.attoseconds) / 1e18
        Thread { [self] in
            while true {
                let connection = accept(fd, nil, nil)
                if connection < 0 { if errno == EINTR { continue } else { return } }
                Thread { self.answer(connection, after: seconds) }.start()
            }
        }.start()
    }

    /// How many requests `path` got.
    func requests(_ path: String) -> Int { counts.withLock { $0[path] ?? 0 } }

    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    private func answer(_ connection: Int32, after seconds: Double) {
        defer { close(connection) }
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        // The head, then the body its Content-Length announces (at most 64 KiB, 100 reads).
        for _ in 0..<100 {
            let text = String(decoding: received, as: UTF8.self)
            if let end = text.range(of: "\r\n\r\n") {
                let length = text[..<end.lowerBound].split(separator: "\r\n")
                    .first { $0.lowercased().hasPrefix("content-length:") }
                    .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
                if text.utf8.distance(from: text.utf8.startIndex, to: end.upperBound) + length <= received.count { break }
            }
            let count = chunk.withUnsafeMutableBytes { read(connection, $0.baseAddress, $0.count) }
            guard count > 0, received.count < 65536 else { return }
            received += chunk[0..<count]
        }
        let path = String(String(decoding: received, as: UTF8.self).split(separator: " ").dropFirst().first ?? "")
        counts.withLock { $0[path, default: 0] += 1 }
        Thread.sleep(forTimeInterval: seconds)
        let base = "http://127.0.0.1:\(port)/o"
        let body: String = if path.contains("/.well-known/") {
            #"{"issuer":"\#(base)","token_endpoint":"\#(base)/token","jwks_uri":"\#(base)/jwks"}"#
        } else if path == "/o/token" {
            #"{"access_token":"access-2","token_type":"Bearer","expires_in":3600,"refresh_token":"refresh-2","#
                + #""id_token":"eyJhbGciOiJSUzI1NiIsImtpZCI6ImsxIn0.e30.c2ln"}"#
        } else {
            #"{"keys":[]}"#
        }
        let response = Array(("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n"
            + "Connection: close\r\n\r\n" + body).utf8)
        _ = response.withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }
}
