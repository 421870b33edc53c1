@testable import CredentialVaultPostgres
import CredentialVault
import Synchronization
import Testing

/// The shared deadline timer of a store's operations (`PostgresDeadlineWatch`), without a server.
/// Wall-clock assertions: `scripts/test` runs them in a process of their own (`.timing`).
@Suite("PostgreSQL operation deadlines: one timer task for all")
struct PostgresDeadlineWatchTests {
    @Suite(.timing, .serialized) struct Timed {
        private func configuration() throws -> PostgresStoreConfiguration {
            try PostgresStoreConfiguration(url: "postgres://vault@127.0.0.1:1/vault", storeName: "s", environment: [:])
        }

        /// Polls `condition` every 20 ms for at most `seconds`.
        private func eventually(within seconds: Int = 5, _ condition: () -> Bool) async throws -> Bool {
            let end = ContinuousClock.now.advanced(by: .seconds(seconds))
            while ContinuousClock.now < end {
                if condition() { return true }
                try await Task.sleep(for: .milliseconds(20))
            }
            return condition()
        }

        @Test("an operation expires once, not before its timeout; one withdrawn in time never does")
        func expiresOnceUnlessWithdrawn() async throws {
            let watch = PostgresDeadlineWatch()
            let fired = Atomic<Int>(0)
            let started = ContinuousClock.now
            let firedAt = Mutex<ContinuousClock.Instant?>(nil)
            _ = watch.watch(timeout: .milliseconds(150), progress: nil) { _ in
                fired.add(1, ordering: .relaxed)
                firedAt.withLock { $0 = ContinuousClock.now }
            }
            let withdrawn = watch.watch(timeout: .milliseconds(150), progress: nil) { _ in
                fired.add(100, ordering: .relaxed)
            }
            watch.withdraw(withdrawn)
            #expect(try await eventually { fired.load(ordering: .relaxed) >= 1 })
            try await Task.sleep(for: .milliseconds(400))
            #expect(fired.load(ordering: .relaxed) == 1, "the first expires exactly once, the withdrawn one never")
            let elapsed = started.duration(to: try #require(firedAt.withLock { $0 }))
            #expect(elapsed >= .milliseconds(150))
            #expect(try await eventually { !watch.isRunning }, "the timer task ends when nothing is watched")
            #expect(watch.watchedCount == 0)
        }

        @Test("many operations on one watch: the quick ones answer, the stuck one is unavailable on time, and the timer ends")
        func manyOperationsShareOneTimer() async throws {
            let configuration = try configuration()
            let watch = PostgresDeadlineWatch()
            // The stuck work waits on a continuation that only the test resumes, after the results:
            // it ignores its cancellation, as a connection attempt to a stopped server may.
            let stuck = StuckWork()
            let results = await withTaskGroup(of: Result<Int, any Error>.self) { group in
                for index in 0..<64 {
                    group.addTask {
                        do {
                            return .success(try await PostgresErrors.guarding(configuration, timeout: .milliseconds(300), watch: watch) {
                                if index == 0 {
                                    await withCheckedContinuation { continuation in stuck.continuation.withLock { $0 = continuation } }
                                }
                                return index
                            })
                        } catch {
                            return .failure(error)
                        }
                    }
                }
                var results: [Result<Int, any Error>] = []
                for await result in group { results.append(result) }
                return results
            }
            let answered = results.compactMap { try? $0.get() }
            #expect(answered.count == 63)
            #expect(!answered.contains(0))
            let failures = results.compactMap { result -> VaultError? in
                if case let .failure(error) = result { return error as? VaultError }
                return nil
            }
            #expect(failures.count == 1)
            #expect(failures.first?.code == .serverUnavailable)
            #expect(failures.first?.message.contains("no answer within 0.3 seconds") == true)
            #expect(try await eventually { !watch.isRunning && watch.watchedCount == 0 })
            // The abandoned work ends when its wait does; its late answer goes nowhere.
            #expect(try await eventually { stuck.continuation.withLock { $0 != nil } })
            stuck.continuation.withLock { $0?.resume(); $0 = nil }
        }
    }
}

/// The continuation a stuck work waits on, resumed by the test at its end.
private final class StuckWork: Sendable {
    let continuation = Mutex<CheckedContinuation<Void, Never>?>(nil)
}
