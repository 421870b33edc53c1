@testable import CredentialVaultPostgres
import CredentialVault
import Foundation
import Testing
import TestScheduling
import VaultCrypto

/// Issue 38, 3c: a streaming-replication standby (`scripts/postgres-server standby`: pg_basebackup
/// -R, synchronous_standby_names '*', synchronous_commit on) promoted while 6 tasks write, and a
/// lagging hot standby. The store is given both hosts in one libpq URL and finds the primary by
/// itself; it never reads from a standby. Each test has a primary and a standby of its own.
@Suite("PostgreSQL failover to a promoted standby", .blockingWork, .serialized,
       .enabled(if: PostgresServer.shouldRun, "no PostgreSQL server (VAULT_POSTGRES_URL)"))
struct PostgresFailoverTests {
    /// 5 s per operation and 2 s per connection attempt, so that the failover fits in a test's minute.
    /// A write in flight when the primary stops may hang until its deadline: postgres-nio does not
    /// always fail a statement whose connection the server closed (seen with a COMMIT waiting for
    /// the synchronous standby); the store's deadline (per statement, so up to twice 5 s) ends it.
    static func options() -> PostgresSecretStore.Options { PostgresServer.options(timeout: .seconds(5)) }

    static func configuration(_ url: String, storeName: String) throws -> PostgresStoreConfiguration {
        var configuration = try PostgresServer.configuration(url: url, storeName: storeName)
        configuration.connectTimeout = .seconds(2)
        return configuration
    }

    @Test("writers on [primary, standby]: the primary stopped -m immediate, the standby promoted, writes resume and every acknowledged one is there",
          .timeLimit(.minutes(10)))
    func aPromotedStandbyIsFoundAndHoldsEveryAcknowledgedWrite() async throws {
        let primary = try PrivatePostgresServer()
        defer { primary.cleanUp() }
        let standby = try PrivatePostgresStandby(of: primary)
        defer { standby.cleanUp() }
        let both = primary.url(ports: [try primary.port, standby.port])
        let key = try PostgresServer.newKey()
        let store = try await PostgresSecretStore.create(configuration: try Self.configuration(both, storeName: "failover"),
                                                         key: key, options: Self.options())
        #expect(store.client.selection.currentEndpointIndex == 0)

        let log = WriteLog()
        let stop = Flag()
        let writers = (0..<6).map { writer in
            Task {
                var index = 0
                while !stop.isSet, index < 10_000 {
                    let name = "w\(writer)-\(index)"
                    index += 1
                    do {
                        try await store.put(NewEntry(name: name, secret: SecureBytes("value of " + name), kind: .password))
                        log.acknowledge(name)
                    } catch let error as VaultError where error.code == .serverUnavailable {
                        // Not retried: cut off, it may or may not have committed. The next put finds the primary.
                        try? await Task.sleep(for: .milliseconds(50))
                    } catch {
                        log.unexpected(error)
                    }
                }
            }
        }
        try await waitUntil(seconds: 20, "20 writes acknowledged by the first primary") { log.count >= 20 }
        try primary.stop(mode: "immediate")
        let acknowledgedBeforeStop = log.names
        try standby.promote()
        let atPromotion = log.count
        try await waitUntil(seconds: 30, "20 writes acknowledged after the promotion") { log.count >= atPromotion + 20 }
        stop.set()
        for writer in writers { await writer.value }

        #expect(log.unexpectedErrors.isEmpty, "\(log.unexpectedErrors)")
        // A write cut off late (on the old primary) may have marked the selection stale again: the
        // next operation asks the hosts once more and stays on the new primary.
        try await store.put(NewEntry(name: "after", secret: SecureBytes("value of after"), kind: .password))
        log.acknowledge("after")
        #expect(store.client.selection.currentEndpointIndex == 1)
        // The pools to the stopped primary and those of the probes that found no primary are gone.
        try await waitUntil(seconds: 10, "every pool not in use shut down") { store.client.selection.poolsShuttingDown == 0 }
        // Every write acknowledged (before the stop, and after the promotion) is on the new primary,
        // read by a store given only that host.
        let promoted = try await PostgresSecretStore.open(configuration: try Self.configuration(standby.url, storeName: "failover"),
                                                          key: key, options: Self.options())
        #expect(acknowledgedBeforeStop.count >= 20)
        for name in log.names {
            #expect(try await promoted.secret(named: name) == SecureBytes("value of " + name), "\(name)")
        }
        // The store that lived through the failover reads from the new primary too.
        for name in acknowledgedBeforeStop.prefix(5) {
            #expect(try await store.secret(named: name) == SecureBytes("value of " + name), "\(name)")
        }
        await promoted.close()
        await store.close()
    }

    @Test("a lagging hot standby: [standby, primary] reads the new value from the primary; the standby alone is refused",
          .timeLimit(.minutes(10)))
    func aLaggingStandbyNeverAnswersAsCurrent() async throws {
        let primary = try PrivatePostgresServer()
        defer { primary.cleanUp() }
        let standby = try PrivatePostgresStandby(of: primary)
        defer { standby.cleanUp() }
        let key = try PostgresServer.newKey()
        let writer = try await PostgresSecretStore.create(configuration: try Self.configuration(primary.url, storeName: "lagging"),
                                                          key: key, options: Self.options())
        try await writer.put(NewEntry(name: "token", secret: SecureBytes("old"), kind: .password))
        try await waitUntil(seconds: 20, "the standby replayed the first write") {
            (try? PostgresServer.psql("SELECT count(*) FROM vault_entries", url: standby.url)) == "1"
        }
        try PostgresServer.psql("SELECT pg_wal_replay_pause()", url: standby.url)
        try await waitUntil(seconds: 20, "the standby's replay paused") {
            (try? PostgresServer.psql("SELECT pg_get_wal_replay_pause_state()", url: standby.url)) == "paused"
        }
        try await writer.put(NewEntry(name: "token", secret: SecureBytes("new"), kind: .password))
        let digest = "SELECT encode(sha256(sealed), 'hex') FROM vault_entries"
        #expect(try PostgresServer.psql(digest, url: standby.url) != PostgresServer.psql(digest, url: primary.url),
                "the standby still holds the old row")

        let standbyFirst = try await PostgresSecretStore.open(
            configuration: try Self.configuration(primary.url(ports: [standby.port, try primary.port]), storeName: "lagging"),
            key: key, options: Self.options())
        #expect(try await standbyFirst.secret(named: "token") == SecureBytes("new"))
        #expect(standbyFirst.client.selection.currentEndpointIndex == 1)
        await standbyFirst.close()
        await writer.close()

        do {
            let standbyOnly = try await PostgresSecretStore.open(configuration: try Self.configuration(standby.url, storeName: "lagging"),
                                                                 key: key, options: Self.options())
            let read = (try? await standbyOnly.secret(named: "token")) != nil
            await standbyOnly.close()
            Issue.record("a store given only the standby opened\(read ? " and read the entry" : "")")
        } catch let error as VaultError {
            #expect(error.code == .serverUnavailable)
            #expect(error.message.localizedCaseInsensitiveContains("no PostgreSQL primary among 1 host"), "\(error.message)")
            #expect(error.message.localizedCaseInsensitiveContains("standby"), "\(error.message)")
        }
    }
}

extension PostgresFailoverTests {
    @Test("after a switchover the old primary is a lagging standby: a read through the pool to it gets the new primary's value",
          .timeLimit(.minutes(10)))
    func aReadNeverTakesTheOldPrimaryTurnedStandbyAsCurrent() async throws {
        let primary = try PrivatePostgresServer()
        defer { primary.cleanUp() }
        let standby = try PrivatePostgresStandby(of: primary)
        defer { standby.cleanUp() }
        let key = try PostgresServer.newKey()
        try await ClosingStores.run { stores in
            let both = try Self.configuration(primary.url(ports: [try primary.port, standby.port]), storeName: "switchover")
            let store = stores.keep(try await PostgresSecretStore.create(configuration: both, key: key, options: Self.options()))
            try await store.put(NewEntry(name: "token", secret: SecureBytes("old"), kind: .password))
            try await store.put(NewEntry(name: "to-remove", secret: SecureBytes("to-remove"), kind: .password))
            try await store.put(NewEntry(name: "to-re-add", secret: SecureBytes("old"), kind: .password))
            #expect(store.client.selection.currentEndpointIndex == 0)
            // A second store on the old primary, for the read: the writes below move `store` to the new one.
            let reader = stores.keep(try await PostgresSecretStore.open(configuration: both, key: key, options: Self.options()))
            #expect(try await reader.secret(named: "token") == SecureBytes("old"))
            #expect(reader.client.selection.currentEndpointIndex == 0)

            // Switchover: the primary stops cleanly, its standby is promoted, and the old primary
            // follows the new one as a hot standby whose replay is then paused (it lags).
            try primary.stop(mode: "fast")
            try standby.promote()
            try primary.follow(standby)
            try PostgresServer.psql("SELECT pg_wal_replay_pause()", url: primary.url)
            try await waitUntil(seconds: 20, "the old primary's replay paused") {
                (try? PostgresServer.psql("SELECT pg_get_wal_replay_pause_state()", url: primary.url)) == "paused"
            }
            let writer = stores.keep(try await PostgresSecretStore.open(configuration: try Self.configuration(standby.url, storeName: "switchover"),
                                                                        key: key, options: Self.options()))
            try await writer.put(NewEntry(name: "token", secret: SecureBytes("new"), kind: .password))
            try await writer.add(NewEntry(name: "added-there", secret: SecureBytes("added-there"), kind: .password))
            try await writer.remove(named: "to-re-add")
            await stores.close(writer)

            // Writes through the pool to the old primary. The fast stop closed the pool's connections:
            // the first write opens a new one to the old primary, now a standby, and its unlocked read
            // of the bucket is answered there in recovery and refused, never decided on. The
            // standby's rows lack "added-there" and still hold "to-re-add": a write deciding from them
            // would fail .notFound and .alreadyExists. That failure has the hosts probed again: the
            // remove sent once more, and the add, go to the new primary.
            let removeFailure = try await Self.writeOnceMoreIfUnavailable("remove added-there") { try await store.remove(named: "added-there") }
            let addFailure = try await Self.writeOnceMoreIfUnavailable("add to-re-add") {
                try await store.add(NewEntry(name: "to-re-add", secret: SecureBytes("re-added"), kind: .password))
            }
            // The wording of `PostgresPrimarySelection.unavailable(after:)` for a `PostgresStandbyAnswer`:
            // the standby check refused the write, not a closed connection (also `.serverUnavailable`).
            #expect(removeFailure?.contains("a host answered as a standby (in recovery)") == true,
                    "the first write through the old pool: \(removeFailure ?? "succeeded")")
            #expect(addFailure == nil, "the second write, after the primary was sought again: \(addFailure ?? "")")
            #expect(store.client.selection.currentEndpointIndex == 1)

            // The reader still holds its pool to the old primary: the read is answered there as a
            // standby, is refused, and goes once to the new primary.
            #expect(try await reader.secret(named: "token") == SecureBytes("new"))
            #expect(reader.client.selection.currentEndpointIndex == 1)

            let promoted = stores.keep(try await PostgresSecretStore.open(configuration: try Self.configuration(standby.url, storeName: "switchover"),
                                                                          key: key, options: Self.options()))
            #expect(await errorCode { _ = try await promoted.secret(named: "added-there") } == .notFound)
            #expect(try await promoted.secret(named: "to-re-add") == SecureBytes("re-added"))
            #expect(try await promoted.secret(named: "to-remove") == SecureBytes("to-remove"))
            #expect(try await promoted.list().map(\.name) == ["to-re-add", "to-remove", "token"])
            #expect(try await promoted.verify().isIntact)
        }
    }

    /// Runs the write `body`. The store never retries a write (one cut off may have committed): when
    /// it fails `.serverUnavailable` (the primary lost), the test sends it once more, which goes to
    /// the primary found then and must succeed. Any other error fails the test.
    /// - Returns: the message of the `.serverUnavailable` failure; nil when the first attempt succeeded.
    private static func writeOnceMoreIfUnavailable(_ what: String, _ body: () async throws -> Void) async throws -> String? {
        do {
            try await body()
            return nil
        } catch let error as VaultError where error.code == .serverUnavailable {
            try await body()
            return error.message
        } catch let error as VaultError {
            Issue.record("\(what) failed \(error.code) (\(error.message)): decided from the old primary's rows as a standby")
            return nil
        }
    }
}

/// What the writer tasks had acknowledged, and any error that is not `.serverUnavailable`.
private final class WriteLog: @unchecked Sendable {
    // @unchecked: every field is read and written under `lock`.
    private let lock = NSLock()
    private var acknowledged: [String] = []
    private var unexpected: [String] = []

    func acknowledge(_ name: String) { lock.withLock { acknowledged.append(name) } }
    func unexpected(_ error: any Error) { lock.withLock { unexpected.append("\(error)") } }
    var count: Int { lock.withLock { acknowledged.count } }
    var names: [String] { lock.withLock { acknowledged } }
    var unexpectedErrors: [String] { lock.withLock { unexpected } }
}

/// Polls `condition` every 100 ms for at most `seconds`.
private func waitUntil(seconds: Double, _ what: String, _ condition: () throws -> Bool) async throws {
    let deadline = Date().addingTimeInterval(seconds)
    while !(try condition()) {
        guard Date() < deadline else { throw TestFailure("not within \(seconds) s: \(what)") }
        try await Task.sleep(for: .milliseconds(100))
    }
}
