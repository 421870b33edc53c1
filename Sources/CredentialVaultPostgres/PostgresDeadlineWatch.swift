import Synchronization

/// The deadlines of a store's operations, kept by one timer task rather than one per operation.
///
/// `PostgresErrors.guarding` registers each operation's deadline here and withdraws it when the
/// operation ends. A task of the watch's own wakes at the earliest deadline (at most every
/// `longestSleep`) and expires what is due. It runs only while some operation is registered and
/// ends when none is, so a closed store leaves no task behind. Before this, every read and write
/// started a timer task and a sleep and cancelled both: at 32 concurrent readers on two cores
/// that cost more CPU than the library's own cryptography (docs/BENCHMARKS.md, issue 38).
///
/// With a `PostgresProgress`, a due deadline that finds more statements answered than at the
/// last check moves one `timeout` on, as the per-statement deadline requires.
final class PostgresDeadlineWatch: Sendable {
    /// How long the timer task sleeps at most between checks: a deadline registered while it
    /// sleeps toward a later one is seen this late at worst.
    static let longestSleep: Duration = .milliseconds(50)

    /// What is due when an operation's deadline passes.
    struct Expiry: Sendable {
        /// How many statements the operation had answered (0 without progress, or none).
        var answered: Int
    }

    private struct Watched {
        /// Nil until the timer task first sees the operation: as with a timer task of its own,
        /// the time counts from when the watch runs, so a thread pool busy elsewhere delays the
        /// deadline and the work alike, never the deadline alone.
        var deadline: ContinuousClock.Instant?
        var timeout: Duration
        var progress: PostgresProgress?
        var answered: Int
        var expire: @Sendable (Expiry) -> Void
    }

    private struct State {
        var watched: [UInt64: Watched] = [:]
        var nextID: UInt64 = 0
        var running = false
    }

    private let state = Mutex(State())

    init() {}

    /// Watches an operation: `expire` is called once, from the watch's task, if `timeout` passes
    /// (with `progress`: passes with no statement answered) before `withdraw` is called with the
    /// returned id.
    func watch(timeout: Duration, progress: PostgresProgress?, expire: @escaping @Sendable (Expiry) -> Void) -> UInt64 {
        let (id, start) = state.withLock { state -> (UInt64, Bool) in
            let id = state.nextID
            state.nextID &+= 1
            state.watched[id] = Watched(deadline: nil, timeout: timeout, progress: progress,
                                        answered: progress?.count ?? 0, expire: expire)
            let start = !state.running
            state.running = true
            return (id, start)
        }
        if start {
            // Detached: not the priority or task-locals of whichever operation happened to start it.
            // Medium, the default, not higher: the check of a due deadline yields once so that a
            // work whose wake-up is queued runs first, which a timer of higher priority would defeat.
            Task.detached(priority: .medium) { await self.run() }
        }
        return id
    }

    /// Stops watching the operation `id` (it ended); its expiry is never called after this returns
    /// unless it was already due.
    func withdraw(_ id: UInt64) {
        _ = state.withLock { $0.watched.removeValue(forKey: id) }
    }

    /// The number of operations watched now (for tests).
    var watchedCount: Int { state.withLock { $0.watched.count } }

    /// Whether the timer task runs (for tests: it ends once nothing is watched).
    var isRunning: Bool { state.withLock { $0.running } }

    /// The timer task: expires what is due, sleeps until the next deadline (at most
    /// `longestSleep`), and ends when nothing is watched.
    ///
    /// A deadline found due is confirmed after one `Task.yield()`: a work whose wake-up is already
    /// queued behind this task (a thread pool busy elsewhere runs both late) answers first, as it
    /// would have before a timer of its own that was due later.
    private func run() async {
        while true {
            let now = ContinuousClock.now
            let (due, next) = state.withLock { state -> ([UInt64], ContinuousClock.Instant?) in
                var due: [UInt64] = []
                var next: ContinuousClock.Instant?
                for (id, var watched) in state.watched {
                    let deadline: ContinuousClock.Instant
                    if let set = watched.deadline, set > now {
                        deadline = set
                    } else if let moved = watched.deadline == nil ? now.advanced(by: watched.timeout) : Self.progressed(&watched, now: now) {
                        // First seen (the time counts from now), or more answered since the last check.
                        deadline = moved
                        watched.deadline = moved
                        state.watched[id] = watched
                    } else {
                        due.append(id)
                        continue
                    }
                    next = next.map { min($0, deadline) } ?? deadline
                }
                if state.watched.isEmpty { state.running = false }
                return (due, next)
            }
            if !due.isEmpty {
                await Task.yield()
                let expired = state.withLock { state -> [(@Sendable (Expiry) -> Void, Expiry)] in
                    let now = ContinuousClock.now
                    var expired: [(@Sendable (Expiry) -> Void, Expiry)] = []
                    for id in due {
                        guard var watched = state.watched[id] else { continue }
                        if Self.progressed(&watched, now: now) != nil {
                            state.watched[id] = watched
                        } else {
                            state.watched[id] = nil
                            expired.append((watched.expire, Expiry(answered: watched.answered)))
                        }
                    }
                    return expired
                }
                for (expire, expiry) in expired { expire(expiry) }
                continue
            }
            guard let next else { return }
            let sleep = min(now.duration(to: next), Self.longestSleep)
            try? await Task.sleep(for: max(sleep, .milliseconds(1)))
        }
    }

    /// When `watched` has had more statements answered since its last check, its deadline moves
    /// one timeout on from `now` (the deadline applies to each statement) and is returned; nil otherwise.
    private static func progressed(_ watched: inout Watched, now: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        guard let progress = watched.progress else { return nil }
        let answered = progress.count
        guard answered != watched.answered else { return nil }
        watched.answered = answered
        watched.deadline = now.advanced(by: watched.timeout)
        return watched.deadline
    }
}
