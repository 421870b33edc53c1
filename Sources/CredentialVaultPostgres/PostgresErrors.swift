import CredentialVault
import PostgresNIO
import Synchronization

/// Turns what PostgresNIO throws into `VaultError`s: a server that is down, restarting or slow
/// is `.serverUnavailable` (a session layer reports it as unavailable, never as signed out);
/// anything else the server refused is `.io` with its SQLSTATE. No message quotes a query's
/// parameters (they hold ciphertext and lookups) or the server's free text.
enum PostgresErrors {
    /// Runs `body` under `timeout`, mapping its errors. The deadline does not wait for `body` to
    /// notice its cancellation (a connection attempt to a stopped server may not): the caller gets
    /// `.serverUnavailable` on time, and the abandoned attempt ends when the pool gives up or closes.
    ///
    /// `watch` keeps the deadline: the store's own (`PostgresPrimarySelection.deadlines`), one
    /// timer task for all its operations.
    ///
    /// With `progress`, the deadline applies to each statement rather than to the whole: it fails
    /// only when `timeout` passes with no further statement answered, and its message says whether
    /// the server never answered or answered some statements and then stopped.
    static func guarding<T: Sendable>(_ configuration: PostgresStoreConfiguration, timeout: Duration,
                                      progress: PostgresProgress? = nil, watch: PostgresDeadlineWatch,
                                      _ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let race = DeadlineRace<T>(mapping: { mapped($0, configuration) })
        let watched = watch.watch(timeout: timeout, progress: progress) { expiry in
            race.finish(.failure(unavailable(configuration, expiry.answered == 0
                ? "no answer within \(timeout)"
                : "it answered \(expiry.answered) statements of this operation, then none within \(timeout)")))
        }
        // Withdrawn as soon as the race is decided: no deadline outlives its operation.
        defer { watch.withdraw(watched) }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                race.start(continuation: continuation, body: body)
            }
        } onCancel: {
            race.finish(.failure(CancellationError()))
        }
    }

    static func mapped(_ error: any Error, _ configuration: PostgresStoreConfiguration) -> any Error {
        if error is VaultError || error is CancellationError { return error }
        // What a transaction's own code threw (a tampered row, a taken name) comes as it is; a
        // failed BEGIN or COMMIT as what the server answered.
        if let failed = error as? PostgresTransactionCommandError { return mapped(failed.underlying, configuration) }
        if error is PostgresConnectionClosed { return unavailable(configuration, "the server closed the connection") }
        guard let error = error as? PSQLError else {
            return unavailable(configuration, "connection failed: \(type(of: error))")
        }
        if error.code == .server {
            let state = error.serverInfo?[.sqlState] ?? "unknown"
            // Class 08 (connection exception), 57P01-57P03 (shutdown, crash recovery, cannot connect now),
            // 57014 (cancelled: statement_timeout, which may fire after the write procedure's COMMIT).
            if state.hasPrefix("08") || ["57P01", "57P02", "57P03", "57014"].contains(state) {
                return unavailable(configuration, "SQLSTATE \(state)")
            }
            return VaultError(.io, "the PostgreSQL server refused the operation (SQLSTATE \(state))",
                              fix: "check the database user's rights on the vault_stores and vault_entries tables")
        }
        return unavailable(configuration, "\(error.code)")
    }

    static func unavailable(_ configuration: PostgresStoreConfiguration, _ why: String) -> VaultError {
        // With several hosts the operation went to whichever was the primary: all are named.
        let server = configuration.endpoints.count > 1
            ? "primary (of \(configuration.endpoints.map(\.displayName).joined(separator: ", ")))"
            : "server at \(TerminalText.escaped(configuration.host)):\(configuration.port)"
        return VaultError(.serverUnavailable, "the PostgreSQL \(server) is unavailable (\(why))",
                          fix: "check that the server is running and reachable; a write cut off this way is committed whole or not at all")
    }
}

/// One continuation resumed exactly once, by whichever comes first: the work's result, the
/// deadline (`PostgresDeadlineWatch`), or the caller's cancellation (which also cancels the work).
/// The work is its own task, so that the caller can be answered at the deadline even when the
/// work does not notice its cancellation. (`Task.immediate`, which saves the hop to another
/// thread, was tried and left: under AddressSanitizer the tasks it started for abandoned
/// operations were reported leaked at exit, where `Task` ones are not.) The race forgets the
/// work once decided.
private final class DeadlineRace<T: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<T, any Error>?
        var work: Task<Void, Never>?
        /// The race's result when it was decided before `start` (a deadline or a cancellation).
        var early: Result<T, any Error>?
        var finished = false
    }
    private let state = Mutex(State())
    private let mapping: @Sendable (any Error) -> any Error

    init(mapping: @escaping @Sendable (any Error) -> any Error) {
        self.mapping = mapping
    }

    func start(continuation: CheckedContinuation<T, any Error>, body: @escaping @Sendable () async throws -> T) {
        let early = state.withLock { state -> Result<T, any Error>? in
            if state.finished { return state.early ?? .failure(CancellationError()) }
            state.continuation = continuation
            return nil
        }
        if let early {
            continuation.resume(with: early.mapError(mapping))
            return
        }
        let work = Task {
            do { self.finish(.success(try await body())) } catch { self.finish(.failure(error)) }
        }
        // The race may already be decided (the deadline passed, the caller cancelled): then the work is not wanted.
        let decided = state.withLock { state in
            if !state.finished { state.work = work }
            return state.finished
        }
        if decided { work.cancel() }
    }

    func finish(_ result: Result<T, any Error>) {
        let taken = state.withLock { state -> (CheckedContinuation<T, any Error>?, Task<Void, Never>?) in
            guard !state.finished else { return (nil, nil) }
            state.finished = true
            guard let continuation = state.continuation else {
                state.early = result
                return (nil, nil)
            }
            state.continuation = nil
            defer { state.work = nil }
            return (continuation, state.work)
        }
        guard let continuation = taken.0 else { return }
        if case .failure = result { taken.1?.cancel() }
        continuation.resume(with: result.mapError(mapping))
    }
}
