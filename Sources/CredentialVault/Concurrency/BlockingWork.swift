import Dispatch

/// Runs work that blocks a thread (scrypt, waiting on another process's `flock`) on a
/// Dispatch thread instead of Swift's cooperative pool, which has one thread per core:
/// two unlocks on a 2-core machine would otherwise stall every other task of the app
/// (a server's request handlers included) until they finish.
package enum BlockingWork {
    private static let queue = DispatchQueue(label: "vault.blocking-work", qos: .userInitiated, attributes: .concurrent)

    /// Runs `body` on a Dispatch thread and suspends the caller until it returns.
    package static func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try body() }) }
        }
    }
}
