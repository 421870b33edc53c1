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
    /// With `progress`, the deadline applies to each statement rather than to the whole: it fails
    /// only when `timeout` passes with no further statement answered, and its message says whether
    /// the server never answered or answered some statements and then stopped.
    static func guarding<T: Sendable>(_ configuration: PostgresStoreConfiguration, timeout: Duration,
                                      progress: PostgresProgress? = nil,
                                      _ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let race = DeadlineRace<T>()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                race.start(continuation: continuation, mapping: { mapped($0, configuration) }, body: body,
                           timer: Task {
                               // Cancelled when the work finishes first: no timer outlives its operation.
                               var answered = 0
                               while true {
                                   guard (try? await Task.sleep(for: timeout)) != nil else { return }
                                   let now = progress?.count ?? 0
                                   if progress == nil || now == answered { break }
                                   answered = now
                               }
                               race.finish(.failure(unavailable(configuration, answered == 0
                                   ? "no answer within \(timeout)"
                                   : "it answered \(answered) statements of this operation, then none within \(timeout)")))
                           })
            }
        } onCancel: {
            race.finish(.failure(CancellationError()))
        }
    }

    static func mapped(_ error: any Error, _ configuration: PostgresStoreConfiguration) -> any Error {
        if error is VaultError || error is CancellationError { return error }
        if let transaction = error as? PostgresTransactionError {
            // What the transaction's own code threw (a tampered row, a taken name) comes first;
            // the rollback that followed it succeeded or, if not, the server is gone anyway.
            if let inner = transaction.closureError ?? transaction.beginError ?? transaction.commitError {
                return mapped(inner, configuration)
            }
            return unavailable(configuration, "the transaction failed")
        }
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
/// deadline, or the caller's cancellation (which also cancels the work). The deadline's timer is
/// cancelled as soon as the race is decided: a sleeping timer per finished operation (10 s each,
/// thousands at a time under load) cost every later operation its share of the timer queue.
private final class DeadlineRace<T: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<T, any Error>?
        var mapping: (@Sendable (any Error) -> any Error)?
        var work: Task<Void, Never>?
        var timer: Task<Void, Never>?
        var finished = false
    }
    private let state = Mutex(State())

    func start(continuation: CheckedContinuation<T, any Error>, mapping: @escaping @Sendable (any Error) -> any Error,
               body: @escaping @Sendable () async throws -> T, timer: Task<Void, Never>) {
        let alreadyFinished = state.withLock { state in
            state.continuation = continuation
            state.mapping = mapping
            state.timer = timer
            return state.finished
        }
        if alreadyFinished {
            timer.cancel()
            continuation.resume(throwing: CancellationError())
            return
        }
        let work = Task {
            do { self.finish(.success(try await body())) } catch { self.finish(.failure(error)) }
        }
        // The race may already be decided (the deadline passed, the caller cancelled): then the work is not wanted.
        let decided = state.withLock { state in
            state.work = work
            return state.finished
        }
        if decided { work.cancel() }
    }

    func finish(_ result: Result<T, any Error>) {
        let taken = state.withLock { state -> (CheckedContinuation<T, any Error>?, (@Sendable (any Error) -> any Error)?,
                                               Task<Void, Never>?, Task<Void, Never>?) in
            guard !state.finished else { return (nil, nil, nil, nil) }
            state.finished = true
            defer {
                state.continuation = nil
                state.timer = nil
            }
            return (state.continuation, state.mapping, state.work, state.timer)
        }
        taken.3?.cancel()
        guard let continuation = taken.0 else { return }
        if case .failure = result { taken.2?.cancel() }
        continuation.resume(with: result.mapError { taken.1?($0) ?? $0 })
    }
}
