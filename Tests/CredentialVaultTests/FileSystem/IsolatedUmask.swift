#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// Runs code under a different umask without touching the umask of other tests.
///
/// The umask is process-wide and swift-testing runs tests in parallel, so a plain
/// `umask(0)` would leak into every test running at that moment. Instead a dedicated
/// thread calls `unshare(CLONE_FS)`, which gives that thread alone its own umask (and
/// cwd), sets the umask there and runs `body`; the thread then ends. `unshare` is not
/// exported by the Glibc module (it needs _GNU_SOURCE), hence `dlsym`.
enum IsolatedUmask {
    /// `CLONE_FS` from <sched.h>.
    private static let cloneFS: Int32 = 0x200

    /// The outcome handed from the worker thread back to the test.
    /// `@unchecked Sendable`: written by the worker before `done.signal()`, read only after `done.wait()`.
    private final class Outcome: @unchecked Sendable {
        var error: Error?
        var isolated = false
    }

    /// Runs `body` on a fresh thread whose umask is `mask`.
    ///
    /// Where the kernel refuses `unshare` (some seccomp profiles), falls back to changing
    /// the process umask for the duration of `body` only; callers keep `body` short and
    /// live in a `.serialized` suite to narrow that window.
    /// - Returns: whether the umask change was confined to the worker thread.
    @discardableResult
    static func run(_ mask: mode_t, _ body: @escaping @Sendable () throws -> Void) throws -> Bool {
        typealias Unshare = @convention(c) (Int32) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "unshare") else {
            try runProcessWide(mask, body)
            return false
        }
        let unshare = unsafeBitCast(symbol, to: Unshare.self)
        let outcome = Outcome()
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            defer { done.signal() }
            guard unshare(cloneFS) == 0 else { return }
            outcome.isolated = true
            umask(mask)
            do { try body() } catch { outcome.error = error }
        }
        thread.start()
        done.wait()
        if let error = outcome.error { throw error }
        if !outcome.isolated { try runProcessWide(mask, body) }
        return outcome.isolated
    }

    /// The fallback: the whole process under `mask` while `body` runs.
    private static func runProcessWide(_ mask: mode_t, _ body: () throws -> Void) throws {
        let previous = umask(mask)
        defer { umask(previous) }
        try body()
    }

    /// The calling thread's umask, read from /proc without changing it.
    static func currentThreadMask() -> mode_t? {
        guard let text = try? String(contentsOfFile: "/proc/thread-self/status", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("Umask:") {
            return mode_t(line.dropFirst("Umask:".count).trimmingCharacters(in: .whitespaces), radix: 8)
        }
        return nil
    }
}
