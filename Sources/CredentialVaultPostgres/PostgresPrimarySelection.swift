import CredentialVault
import Logging
import PostgresNIO
import Synchronization

/// Which of the configuration's hosts is the primary, and the connection pool to it.
///
/// The first operation, and the first after one that lost the primary (the server went away,
/// answered as a standby, or refused a write as read-only), probes every host at once with
/// `SELECT pg_is_in_recovery()`, each bounded by `connectTimeout`, and uses the first host to
/// answer that it is not in recovery (a healthy cluster has one primary; hosts that answer at
/// the same moment are taken in the URL's order); with none, the operation fails
/// `.serverUnavailable` ("no primary among N hosts"). Operations running meanwhile share one
/// probe. The pool of the host already in use probes that host (its connections are kept); a
/// pool to a host not chosen is shut down at once, and so is the old primary's when another host
/// is chosen. When none answers as the primary but the host in use did not answer as a standby
/// either (down, restarting, or too busy to answer in time), it stays in use: the operation finds
/// out for itself, and its next failure asks again. `run()` lasts as long as the store and shuts
/// every pool down when cancelled.
final class PostgresPrimarySelection: Sendable {
    /// A pool to one endpoint and the task that runs it.
    private struct Pool: Sendable {
        let endpointIndex: Int
        let client: PostgresClient
        let runner: Task<Void, Never>
    }

    private struct State {
        var current: Pool?
        /// True until a probe chose a primary, and again after an operation lost it.
        var stale = true
        /// The probe under way, awaited by every operation that needs a primary meanwhile.
        var probe: Task<Pool, any Error>?
        /// Pools shut down and not yet finished, by a number of their own (each removes itself).
        var retiring: [Int: Task<Void, Never>] = [:]
        var nextRetiringID = 0
        var closed = false
    }

    let configuration: PostgresStoreConfiguration
    /// The deadlines of every operation of the store (one timer task for all, not one each).
    let deadlines = PostgresDeadlineWatch()
    private let logger: Logger
    private let makePool: @Sendable (PostgresStoreConfiguration.Endpoint) -> PostgresClient
    private let state = Mutex(State())

    /// A selection that probes lazily, on the first operation.
    /// - Parameters:
    ///   - configuration: The hosts and the connect timeout that bounds each probe.
    ///   - logger: Where the probes' diagnostics go.
    ///   - makePool: Builds the (not yet running) pool to one endpoint.
    init(configuration: PostgresStoreConfiguration, logger: Logger,
         makePool: @escaping @Sendable (PostgresStoreConfiguration.Endpoint) -> PostgresClient) {
        self.configuration = configuration
        self.logger = logger
        self.makePool = makePool
    }

    /// The client the store's statements go through: each call uses the current primary's pool.
    var client: PostgresPrimaryClient { PostgresPrimaryClient(selection: self) }

    /// Which endpoint is in use (its index in `configuration.endpoints`), nil before the first probe
    /// and while the hosts must be asked again. For tests and diagnostics.
    var currentEndpointIndex: Int? { state.withLock { $0.stale ? nil : $0.current?.endpointIndex } }

    /// How many pools were shut down and have not finished yet (each does within `connectTimeout`).
    var poolsShuttingDown: Int { state.withLock { $0.retiring.count } }

    /// Lasts until cancelled, then shuts every pool down and waits for them (bounded: a pool's
    /// connection attempts end with `connectTimeout`).
    func run() async {
        while !Task.isCancelled {
            guard (try? await Task.sleep(for: .seconds(3600))) != nil else { break }
        }
        await shutDown()
    }

    /// Marks the primary lost: the next operation probes the hosts again.
    func markStale() {
        state.withLock { $0.stale = true }
    }

    /// The pool of the current primary, probing first if there is none or it was lost.
    /// - Throws: `.serverUnavailable` when no host answers as a primary, or the store is closed.
    func primary() async throws -> PostgresClient {
        enum Next { case use(PostgresClient), wait(Task<Pool, any Error>), closed }
        let next: Next = state.withLock { state in
            if state.closed { return .closed }
            if !state.stale, let current = state.current { return .use(current.client) }
            if let probe = state.probe { return .wait(probe) }
            let probe = Task { try await self.probeAll() }
            state.probe = probe
            return .wait(probe)
        }
        switch next {
        case .use(let client): return client
        case .wait(let probe): return try await probe.value.client
        case .closed:
            throw VaultError(.serverUnavailable, "the PostgreSQL store was closed",
                             fix: "open the store again")
        }
    }

    /// Whether `error` means the primary was lost: the connection failed or was closed, the
    /// server is shutting down or starting, it answered as a standby, or it refused a write as
    /// read-only (SQLSTATE 25006).
    static func lostPrimary(_ error: any Error) -> Bool {
        if error is PostgresStandbyAnswer || error is PostgresConnectionClosed { return true }
        if let error = error as? VaultError { return error.code == .serverUnavailable }
        if let failed = error as? PostgresTransactionCommandError { return lostPrimary(failed.underlying) }
        guard let error = error as? PSQLError else { return false }
        guard error.code == .server else { return true }
        let state = error.serverInfo?[.sqlState] ?? ""
        return state.hasPrefix("08") || ["57P01", "57P02", "57P03", "25006"].contains(state)
    }

    /// The error an operation that lost the primary reports: `.serverUnavailable`, saying why
    /// when the server answered as a standby or refused a write as read-only.
    func unavailable(after error: any Error) -> any Error {
        if error is PostgresStandbyAnswer {
            return noPrimary("a host answered as a standby (in recovery); its rows are never used")
        }
        if Self.sqlState(of: error) == "25006" {
            return noPrimary("a host refused the write as read-only (a standby)")
        }
        return error
    }

    private static func sqlState(of error: any Error) -> String? {
        if let failed = error as? PostgresTransactionCommandError { return sqlState(of: failed.underlying) }
        guard let error = error as? PSQLError, error.code == .server else { return nil }
        return error.serverInfo?[.sqlState]
    }

    private func noPrimary(_ why: String) -> VaultError {
        let count = configuration.endpoints.count
        let hosts = configuration.endpoints.map(\.displayName).joined(separator: ", ")
        return VaultError(.serverUnavailable,
                          "no PostgreSQL primary among \(count) host\(count == 1 ? "" : "s") (\(hosts)): \(why)",
                          fix: "check that the primary is running and reachable, or promote a standby; a write cut off this way is committed whole or not at all")
    }

    // MARK: - Probing

    /// Probes every endpoint at once and installs the first to answer as a primary.
    private func probeAll() async throws -> Pool {
        let current = state.withLock { $0.current }
        var candidates: [Pool] = []
        for (index, endpoint) in configuration.endpoints.enumerated() {
            if let current, current.endpointIndex == index {
                candidates.append(current)
            } else {
                let client = makePool(endpoint)
                candidates.append(Pool(endpointIndex: index, client: client, runner: Task { await client.run() }))
            }
        }
        let configuration = self.configuration
        let logger = self.logger
        let deadlines = self.deadlines
        let answers = await withTaskGroup(of: (Int, Bool?).self) { group in
            for candidate in candidates {
                group.addTask {
                    let inRecovery = try? await PostgresErrors.guarding(configuration, timeout: configuration.connectTimeout, watch: deadlines) {
                        let answer = try await candidate.client.withConnection { connection in
                            var answer: Bool?
                            for try await value in try await connection.queryIfOpen("SELECT pg_catalog.pg_is_in_recovery()", logger: logger)
                                .decode(Bool.self) { answer = value }
                            return answer
                        }
                        guard let answer else { throw PostgresStandbyAnswer() }
                        return answer
                    }
                    return (candidate.endpointIndex, inRecovery)
                }
            }
            var answers: [Int: Bool] = [:]
            for await (index, inRecovery) in group {
                answers[index] = inRecovery
                // The first primary to answer is taken: a host that is down would otherwise hold
                // every probe for the whole connect timeout (its pool keeps retrying until then).
                if inRecovery == false {
                    group.cancelAll()
                    break
                }
            }
            return answers
        }
        let chosen = candidates.first { answers[$0.endpointIndex] == false }
        // No host answered as the primary, but the one in use did not answer as a standby either: it
        // is down, restarting, or too busy to answer within connectTimeout. It stays in use and the
        // operation finds out for itself (its pool reconnects when the host is back), so a loaded
        // or restarting primary is not taken for a missing one; its next failure asks again.
        let fallback = chosen == nil ? current.flatMap { answers[$0.endpointIndex] == true ? nil : $0 } : nil
        // The pool in use is kept even when it answered as a standby: it is shut down once another
        // host is chosen, or when the store closes.
        let kept = chosen ?? current
        let unwanted = candidates.filter { $0.endpointIndex != kept?.endpointIndex }
        let closed = state.withLock { state -> Bool in
            state.probe = nil
            if state.closed { return true }
            for pool in unwanted { retire(pool, in: &state) }
            state.current = kept
            state.stale = chosen == nil && fallback == nil
            return false
        }
        if closed {
            // The store closed during the probe: nothing installed, every pool shut down here.
            for pool in candidates { pool.runner.cancel() }
            for pool in candidates { await pool.runner.value }
            throw VaultError(.serverUnavailable, "the PostgreSQL store was closed", fix: "open the store again")
        }
        if chosen == nil, let fallback { return fallback }
        guard let chosen else {
            let standbys = answers.values.filter { $0 }.count
            throw noPrimary(standbys == 0
                ? "none could be reached within \(configuration.connectTimeout)"
                : "\(standbys) answered as a standby (in recovery), any other could not be reached within \(configuration.connectTimeout)")
        }
        if chosen.endpointIndex != current?.endpointIndex {
            logger.info("PostgreSQL primary selected", metadata: ["host": "\(configuration.endpoints[chosen.endpointIndex].displayName)"])
        }
        return chosen
    }

    /// Cancels a pool's task and keeps it until it has finished (`shutDown` waits for it).
    private func retire(_ pool: Pool, in state: inout State) {
        pool.runner.cancel()
        let id = state.nextRetiringID
        state.nextRetiringID += 1
        // Created under the lock: the task's own removal waits for the lock, so it comes after the insertion.
        state.retiring[id] = Task {
            await pool.runner.value
            self.state.withLock { _ = $0.retiring.removeValue(forKey: id) }
        }
    }

    private func shutDown() async {
        let probe = state.withLock { state -> Task<Pool, any Error>? in
            state.closed = true
            return state.probe
        }
        probe?.cancel()
        _ = try? await probe?.value
        let (current, retiring) = state.withLock { state in
            defer { state.current = nil }
            return (state.current, Array(state.retiring.values))
        }
        current?.runner.cancel()
        await current?.runner.value
        for task in retiring { await task.value }
    }
}
