#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

// Whether new `SecureBytes` buffers are locked in memory: set once by a long-lived process that
// holds keys (the agent), never unset. One word, read on every allocation.
private let lockingNewBuffers = Atomic<Bool>(false)
// How many buffers could not be locked (RLIMIT_MEMLOCK reached), for the agent's status.
private let lockFailures = Atomic<Int>(0)

/// Locked memory for `SecureBytes`, for processes that keep keys for a long time.
///
/// After `lockNewBuffers()`, every new `SecureBytes` buffer is allocated on whole pages, locked
/// with `mlock(2)` (never written to swap) and marked `MADV_DONTDUMP` (left out of core dumps,
/// which the process also disables); it is wiped, unlocked and freed when released. The CLI's
/// short-lived commands do not lock: their secrets live for milliseconds.
public enum SecureMemory {
    /// The least `RLIMIT_MEMLOCK` that `lockNewBuffers` accepts: room for the keys of many vaults
    /// and a few secrets in flight.
    public static let minimumLockLimit = 1 << 20

    /// Locks every `SecureBytes` buffer allocated from now on.
    /// - Returns: the soft `RLIMIT_MEMLOCK`, in bytes (`Int.max` when unlimited).
    /// - Throws: `LockLimitTooLow` when the limit is below `minimumLockLimit` (it says how to raise it).
    @discardableResult
    public static func lockNewBuffers() throws -> Int {
        var limit = rlimit()
        // RLIMIT_MEMLOCK is 8 on Linux; Swift's Glibc module does not export the macro.
        let soft = getrlimit(__rlimit_resource_t(8), &limit) != 0 ? 0
            : limit.rlim_cur == rlim_t.max ? Int.max : Int(clamping: limit.rlim_cur)
        guard soft >= minimumLockLimit else { throw LockLimitTooLow(limit: soft) }
        lockingNewBuffers.store(true, ordering: .sequentiallyConsistent)
        return soft
    }

    /// `RLIMIT_MEMLOCK` is too low to lock keys in memory.
    public struct LockLimitTooLow: Error, Sendable, CustomStringConvertible {
        /// The soft limit, in bytes.
        public let limit: Int
        /// What is wrong and how to raise the limit.
        public var description: String {
            "the locked-memory limit (RLIMIT_MEMLOCK) is \(limit / 1024) KiB; keys need at least \(SecureMemory.minimumLockLimit / 1024) KiB "
                + "(raise it: ulimit -l 8192, or LimitMEMLOCK=8M in the systemd unit)"
        }
    }

    /// How many buffers could not be locked because the limit was reached (they are still wiped).
    public static var failedLocks: Int { lockFailures.load(ordering: .relaxed) }

    static var isLocking: Bool { lockingNewBuffers.load(ordering: .relaxed) }

    /// The page size, for whole-page allocations.
    static let pageSize = max(Int(sysconf(Int32(_SC_PAGESIZE))), 4096)

    /// Locks and excludes from dumps a page-aligned buffer; counts a failure.
    static func lock(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let base = buffer.baseAddress else { return }
        if mlock(base, buffer.count) != 0 { lockFailures.add(1, ordering: .relaxed) }
        _ = madvise(base, buffer.count, MADV_DONTDUMP)
    }

    /// Unlocks a buffer `lock` locked (after it was wiped).
    static func unlock(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let base = buffer.baseAddress else { return }
        _ = munlock(base, buffer.count)
    }
}
