#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The CPU time the calling thread has used: what "refused before scrypt ran" means, measured
/// so that a loaded machine cannot break it. A thread that waits for a core uses none, unlike the
/// wall clock, while scrypt with the parameters these tests refuse would use seconds of it.
package enum ThreadCPUTime {
    /// The CPU time `body` used on this thread (it must not hop threads: synchronous code).
    package static func measure(_ body: () throws -> Void) rethrows -> Duration {
        let start = now()
        try body()
        return now() - start
    }

    private static func now() -> Duration {
        var time = timespec()
        guard clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time) == 0 else { preconditionFailure("CLOCK_THREAD_CPUTIME_ID is always there") }
        return .seconds(time.tv_sec) + .nanoseconds(time.tv_nsec)
    }
}
