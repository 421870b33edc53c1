import Synchronization

/// A point one task reaches and another waits for: ordering by a condition, not by a sleep
/// that a loaded machine can outlast.
package final class Checkpoint: Sendable {
    private let reached = Atomic<Bool>(false)

    /// Creates an unreached checkpoint.
    package init() {}

    /// Marks the checkpoint reached.
    package func reach() { reached.store(true, ordering: .releasing) }

    /// Whether it was reached.
    package var isReached: Bool { reached.load(ordering: .acquiring) }

    /// Suspends until the checkpoint is reached, polling every 5 ms, for at most `limit`.
    /// - Returns: whether it was reached.
    package func wait(atMost limit: Duration = .seconds(60)) async throws -> Bool {
        let deadline = ContinuousClock.now + limit
        while !isReached, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        return isReached
    }
}
