import CredentialVault
import CredentialVaultOAuth
import CredentialVaultPostgres
import Foundation
import OAuthServerSupport
import Synchronization
import Testing
import TestScheduling
import VaultCrypto

/// Issue 38, 3b: the link to the database cut (packets dropped, nothing refused) while a
/// single-flight refresh holds the session's lock. The database is on the far side of a network
/// namespace (scripts/netns-postgres), reached over TLS verified against a throwaway CA
/// (`PGSSLROOTCERT`). Needs root (CAP_NET_ADMIN); CI runs as root.
///
/// The bounds (docs/ARCHITECTURE.md, "Faults"): an operation waits at most its operation timeout
/// (`validCredentials` 7 × it, for the refresh it may wait on), a new connection at most the
/// connect timeout per attempt; a cut shorter than that costs a delay and nothing else (TCP
/// retransmits once the link is back), a longer one `.serverUnavailable` on time.
@Suite("PostgreSQL link cut during a single-flight refresh", .blockingWork, .serialized,
       .enabled(if: NetnsPostgresServer.canRun, "needs root: a network namespace needs CAP_NET_ADMIN (CI runs as root)"),
       .enabled(if: OAuthServer.shouldRun, "no OAuth server (VAULT_OAUTH_SERVER)"))
struct PostgresCutLinkFaultTests {
    /// How long the link stays cut during the refresh: shorter than the operation timeout.
    static let cut: Duration = .seconds(4)
    static let operationTimeout: Duration = .seconds(15)

    @Test(.timeLimit(.minutes(10)))
    func cutDuringRefreshCostsADelayNotAGrantOrAWrite() async throws {
        let oauth = try OAuthServer.require()
        let server = try NetnsPostgresServer()
        defer { server.cleanUp() }
        let folder = try SessionFolder()
        defer { folder.cleanUp() }
        var configuration = try PostgresStoreConfiguration(url: server.url, storeName: "cut-" + UUID().uuidString,
                                                           environment: ["PGSSLROOTCERT": server.trustRootsPath])
        #expect(configuration.endpoints.allSatisfy { $0.transport == .tlsRequired })
        configuration.connectTimeout = .seconds(5)
        let key = try VaultKey.fromKeyFile(path: folder.keyPath)
        // The certificate is verified (NIOSSL checks its IP SAN against the address connected to):
        // without the CA, the system's trust store refuses it.
        var untrusted = configuration
        untrusted.trustRootsPath = nil
        #expect(await errorCode {
            _ = try await PostgresSecretStore.create(configuration: untrusted, key: key, options: PostgresServer.options(timeout: .seconds(3)))
        } != nil, "a server certificate signed by an unknown CA was accepted")
        let store = try await PostgresSecretStore.create(configuration: configuration, key: key,
                                                         options: PostgresServer.options(timeout: Self.operationTimeout))
        defer { Task { await store.close() } }
        for index in 0..<20 {
            try await store.put(NewEntry(name: "before-\(index)", secret: SecureBytes("value-of-before-\(index)")))
        }
        let session = try oauth.userID
        let initial = try oauth.passwordGrant()
        let firstRefresh = try #require(initial.refreshToken)
        try await store.saveCredentials(initial.expiredLocally, session: session)
        let client = try oauth.confidentialClient()

        // The refresher: the first call cuts the link (the lock is held, the transaction open),
        // heals it `cut` later, and meanwhile gets the new pair from the authorization server.
        let refreshes = Mutex(0)
        let cutAt = Mutex<ContinuousClock.Instant?>(nil)
        let refresher: @Sendable (SecureBytes) async throws -> Credentials = { refreshToken in
            let first = refreshes.withLock { count in count += 1; return count == 1 }
            if first {
                try await Task.sleep(for: .milliseconds(500))  // the other tasks queue on the lock
                try await offThePool { try server.cut() }
                cutAt.withLock { $0 = .now }
                Task.detached {
                    try? await Task.sleep(for: Self.cut)
                    try? await offThePool { try server.heal() }
                }
            }
            var fresh = try await client.refresh(refreshToken)
            fresh.expiresAt = Date().addingTimeInterval(3600)  // no second, legitimate refresh in this test
            return fresh
        }

        // 8 tasks refresh the one session; 4 more keep writing other entries through the cut.
        let began = ContinuousClock.now
        let refreshed = Flag()
        let outcome = try await withThrowingTaskGroup(of: Outcome.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    let started = ContinuousClock.now
                    let credentials = try await store.validCredentials(session: session, minTTL: .seconds(1), refresher: refresher)
                    return .credentials(credentials.accessToken, ContinuousClock.now - started)
                }
            }
            for writer in 0..<4 {
                group.addTask {
                    var acknowledged: [String] = [], failures: [String] = []
                    var longest: Duration = .zero
                    for index in 0..<400 {
                        if refreshed.isSet, index > 3 { break }
                        let name = "during-\(writer)-\(index)"
                        let started = ContinuousClock.now
                        do {
                            try await store.put(NewEntry(name: name, secret: SecureBytes("value-of-\(name)")))
                            acknowledged.append(name)
                        } catch let error as VaultError {
                            failures.append(error.code.rawValue)
                        }
                        longest = max(longest, ContinuousClock.now - started)
                        try await Task.sleep(for: .milliseconds(100))
                    }
                    return .writes(acknowledged, failures, longest)
                }
            }
            var tokens: [SecureBytes] = [], acknowledged: [String] = [], failures: [String] = []
            var longestRefresh: Duration = .zero, longestWrite: Duration = .zero
            for try await result in group {
                switch result {
                case .credentials(let token, let waited):
                    tokens.append(token)
                    longestRefresh = max(longestRefresh, waited)
                    if tokens.count == 8 { refreshed.set() }
                case .writes(let names, let failed, let longest):
                    acknowledged += names
                    failures += failed
                    longestWrite = max(longestWrite, longest)
                }
            }
            return (tokens, acknowledged, failures, longestRefresh, longestWrite)
        }
        let (tokens, acknowledged, failures, longestRefresh, longestWrite) = outcome
        let elapsed = ContinuousClock.now - began

        #expect(refreshes.withLock { $0 } == 1, "the refresher ran more than once")
        #expect(cutAt.withLock { $0 } != nil, "the link was never cut")
        #expect(tokens.count == 8)
        #expect(tokens.allSatisfy { $0 == tokens[0] }, "the 8 tasks got different access tokens")
        // Bounded waits: the cut's length plus TCP's retransmission backoff, well inside the bounds.
        #expect(longestRefresh < Self.operationTimeout * 7)
        #expect(longestWrite < Self.operationTimeout + .seconds(5))
        #expect(failures.allSatisfy { $0 == VaultError.Code.serverUnavailable.rawValue }, "\(failures)")
        #expect(acknowledged.count >= 8)

        // Nothing lost; one grant; the refresh token never sent twice (reuse detection would have
        // revoked the family: no live token left in it).
        let reader = try await PostgresSecretStore.open(configuration: configuration, key: key,
                                                        options: PostgresServer.options(timeout: Self.operationTimeout))
        for name in (0..<20).map({ "before-\($0)" }) + acknowledged {
            #expect(try await reader.secret(named: name) == SecureBytes("value-of-\(name)"), "\(name)")
        }
        let record = try oauth.records(of: firstRefresh)
        #expect(record.refreshGrants == 1, "refresh grants at the server: \(String(describing: record.refreshGrants))")
        #expect(record.liveInFamily == 1, "reuse detection revoked the family (a refresh token sent twice)")
        let saved = try await reader.storedCredentials(session: session)
        #expect(saved.accessToken == tokens[0])
        #expect(try oauth.records(of: saved.accessToken).revoked == false)
        #expect(try await reader.verify().isIntact)

        // A cut longer than the operation timeout: `.serverUnavailable` on time, then recovery by
        // itself (the same store, its pooled connections) once the link is back.
        var shortOptions = PostgresServer.options(timeout: .seconds(3))
        shortOptions.kdfPolicy = .testing
        let short = try await PostgresSecretStore.open(configuration: configuration, key: key, options: shortOptions)
        #expect(try await short.secret(named: "before-0") == SecureBytes("value-of-before-0"))
        try server.cut()
        let outageStarted = ContinuousClock.now
        #expect(await errorCode { _ = try await short.secret(named: "before-1") } == .serverUnavailable)
        let outage = ContinuousClock.now - outageStarted
        #expect(outage < .seconds(6), "waited \(outage) for a 3 s operation timeout")
        try server.heal()
        var recovered = false
        for _ in 0..<20 where !recovered {
            recovered = (try? await short.secret(named: "before-1")) == SecureBytes("value-of-before-1")
            if !recovered { try await Task.sleep(for: .milliseconds(500)) }
        }
        #expect(recovered, "the store did not recover after the link healed")
        await short.close()
        await reader.close()
        try await client.shutdown()
        print("cut link: \(elapsed) in all, longest refresh wait \(longestRefresh), longest write \(longestWrite), "
              + "\(acknowledged.count) writes during, \(failures.count) failed, outage answered in \(outage)")
    }

    enum Outcome: Sendable {
        case credentials(SecureBytes, Duration)
        case writes([String], [String], Duration)
    }
}

/// Runs blocking work (a child process) on a Dispatch queue, not on a thread of Swift's
/// cooperative pool: the refresher runs in the store's tasks, not on the suite's own threads.
func offThePool(_ body: @escaping @Sendable () throws -> Void) async throws {
    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
        DispatchQueue.global().async {
            do { try body(); continuation.resume() } catch { continuation.resume(throwing: error) }
        }
    }
}
