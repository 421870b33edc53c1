#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
import TestScheduling
@testable import CredentialVault

@Suite(.blockingWork) struct FileLockTests {
    @Test func sharedLocksCoexistAndExcludeExclusive() throws {
        let sandbox = try FileSystemSandbox()
        defer { sandbox.remove() }
        let path = sandbox.child("vault.lock")
        let first = try FileLock.acquire(path: path, mode: .shared, timeout: .zero)
        let second = try FileLock.acquire(path: path, mode: .shared, timeout: .zero)
        expectFileSystemError(.busy) { try FileLock.acquire(path: path, mode: .exclusive, timeout: .milliseconds(20)) }
        first.release()
        expectFileSystemError(.busy) { try FileLock.acquire(path: path, mode: .exclusive, timeout: .milliseconds(20)) }
        second.release()
        let exclusive = try FileLock.acquire(path: path, mode: .exclusive, timeout: .zero)
        expectFileSystemError(.busy) { try FileLock.acquire(path: path, mode: .shared, timeout: .milliseconds(20)) }
        exclusive.release()
    }

    @Test func releasedLockCanBeReacquiredAndReleaseIsIdempotent() throws {
        let sandbox = try FileSystemSandbox()
        defer { sandbox.remove() }
        let path = sandbox.child("vault.lock")
        let lock = try FileLock.acquire(path: path, mode: .exclusive, timeout: .zero)
        #expect(lock.isHeld)
        lock.release()
        #expect(!lock.isHeld)
        lock.release()
        let again = try FileLock.acquire(path: path, mode: .exclusive, timeout: .zero)
        again.release()
        #expect(SecureFileSystem.exists(path), "release never deletes the lock file")
        #expect(try RawFiles.mode(path) == 0o600)
    }

    @Test func droppingTheLastReferenceReleases() throws {
        let sandbox = try FileSystemSandbox()
        defer { sandbox.remove() }
        let path = sandbox.child("vault.lock")
        do {
            let lock = try FileLock.acquire(path: path, mode: .exclusive, timeout: .zero)
            _ = lock
        }
        let again = try FileLock.acquire(path: path, mode: .exclusive, timeout: .zero)
        again.release()
    }

    // flock locks belong to the open file description: two acquires in one process
    // open the file twice and exclude each other like two processes would.
    //
    // The waiter runs on a thread of its own, not in a task: `acquire` blocks its thread while
    // it polls, and on the cooperative pool (two threads on a two-core machine, shared with the
    // other tests running in parallel) it could keep the test's own task from running to
    // release the lock until the waiter's timeout ran out.
    @Test func twoLocksInTheSameProcessExcludeEachOther() throws {
        let sandbox = try FileSystemSandbox()
        defer { sandbox.remove() }
        let path = sandbox.child("vault.lock")
        let held = try FileLock.acquire(path: path, mode: .exclusive, timeout: .zero)
        expectFileSystemError(.busy) { try FileLock.acquire(path: path, mode: .exclusive, timeout: .milliseconds(30)) }
        // A waiter on another thread gets the lock once the holder lets go, and not before.
        let waiter = LockWaiter(path: path, timeout: .seconds(60))
        #expect(waiter.started.wait(timeout: .now() + 60) == .success, "the waiter thread started")
        usleep(50_000)
        #expect(!waiter.finished.isSet, "the waiter is still waiting while the lock is held")
        let released = ContinuousClock.now
        held.release()
        #expect(waiter.done.wait(timeout: .now() + 120) == .success, "the waiter returned")
        let outcome = try #require(waiter.outcome)
        let acquired = try outcome.lock.get()
        #expect(acquired.isHeld)
        #expect(outcome.at >= released, "the waiter got the lock only after the release")
        acquired.release()
    }

    @Test func refusesSymlinkedLockFile() throws {
        let sandbox = try FileSystemSandbox()
        defer { sandbox.remove() }
        try RawFiles.write(sandbox.child("target"), [], mode: 0o644)
        try RawFiles.symlink(sandbox.child("vault.lock"), to: sandbox.child("target"))
        expectFileSystemError(.insecurePermissions) {
            try FileLock.acquire(path: sandbox.child("vault.lock"), mode: .exclusive, timeout: .zero)
        }
        #expect(try RawFiles.mode(sandbox.child("target")) == 0o644)
        expectFileSystemError(.notFound) {
            try FileLock.acquire(path: sandbox.child("missing/vault.lock"), mode: .exclusive, timeout: .zero)
        }
    }

    @Test func existingLockFileIsTightenedTo0600() throws {
        let sandbox = try FileSystemSandbox()
        defer { sandbox.remove() }
        try RawFiles.write(sandbox.child("vault.lock"), [], mode: 0o666)
        let lock = try FileLock.acquire(path: sandbox.child("vault.lock"), mode: .shared, timeout: .zero)
        lock.release()
        #expect(try RawFiles.mode(sandbox.child("vault.lock")) == 0o600)
    }

}

/// A separate process that takes an exclusive flock on a file and sleeps (10 minutes: long
/// enough that a test starved under ThreadSanitizer still finds it holding), so it can be
/// killed with SIGKILL while holding it.
///
/// With /usr/bin/flock the shell opens the file on fd 9, `flock 9` locks that open file
/// description and exits, and `exec sleep` keeps fd 9 in the same process (same pid), so
/// killing that pid closes the last descriptor. (`flock FILE sleep 30` would fork: killing
/// flock would leave `sleep` holding the lock.)
final class LockHoldingChild: @unchecked Sendable {
    /// The child; only touched from the test's task.
    private let process = Process()

    /// Starts the child.
    init(path: String) throws {
        if FileManager.default.isExecutableFile(atPath: "/usr/bin/flock") {
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", "exec 9<>\"$1\" && /usr/bin/flock -x 9 && exec sleep 600", "sh", path]
        } else {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["python3", "-c",
                                 "import fcntl, os, sys, time\n"
                                 + "fd = os.open(sys.argv[1], os.O_RDWR)\n"
                                 + "fcntl.flock(fd, fcntl.LOCK_EX)\n"
                                 + "time.sleep(600)\n", path]
        }
        try process.run()
    }

    /// Polls until the child holds the lock (a probe that gets it lets go at once).
    func waitUntilHolding(_ path: String) async throws {
        for _ in 0..<500 {
            guard process.isRunning else { throw FileSystemTestError("the lock-holding child exited early") }
            do {
                try FileLock.acquire(path: path, mode: .exclusive, timeout: .zero).release()
            } catch let error as VaultError where error.code == .busy {
                return
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw FileSystemTestError("the child never took the lock")
    }

    /// SIGKILLs the child and reaps it; safe to call twice.
    func kill() {
        guard process.isRunning else { return }
        _ = Glibc.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}

/// Acquires a lock on a thread of its own (not the cooperative pool), recording when.
final class LockWaiter: @unchecked Sendable {
    // Safe: `result` is written once on the waiter thread before `done` is signalled and read
    // only after waiting for `done`; `finished` is a flag under its own lock.
    /// Signalled when the thread runs, just before it starts waiting.
    let started = DispatchSemaphore(value: 0)
    /// Signalled when `acquire` has returned or thrown.
    let done = DispatchSemaphore(value: 0)
    /// Set when `acquire` has returned or thrown (readable without consuming `done`).
    let finished = Flag()
    private var result: (lock: Result<FileLock, any Error>, at: ContinuousClock.Instant)?

    init(path: String, timeout: Duration) {
        let thread = Thread { [self] in
            started.signal()
            let lock = Result { try FileLock.acquire(path: path, mode: .exclusive, timeout: timeout) }
            result = (lock, ContinuousClock.now)
            finished.set()
            done.signal()
        }
        thread.start()
    }

    /// The outcome, once `done` was waited for.
    var outcome: (lock: Result<FileLock, any Error>, at: ContinuousClock.Instant)? { result }

    /// A boolean set once, read from other threads.
    final class Flag: @unchecked Sendable {
        // Safe: `value` is only touched under `lock`.
        private let lock = NSLock()
        private var value = false
        func set() { lock.lock(); value = true; lock.unlock() }
        var isSet: Bool { lock.lock(); defer { lock.unlock() }; return value }
    }
}

extension FileLockTests {
    /// Wall-clock bounds on lock waits: run by scripts/test in a process of their own (TimingTests).
    @Suite(.timing, .serialized) struct Timed {
        @Test func secondExclusiveLockTimesOutWithBusy() throws {
            let sandbox = try FileSystemSandbox()
            defer { sandbox.remove() }
            let path = sandbox.child("vault.lock")
            let held = try FileLock.acquire(path: path, mode: .exclusive, timeout: .zero)
            defer { held.release() }
            let clock = ContinuousClock()
            let start = clock.now
            let error = expectFileSystemError(.busy) { try FileLock.acquire(path: path, mode: .exclusive, timeout: .milliseconds(100)) }
            let elapsed = start.duration(to: clock.now)
            #expect(elapsed >= .milliseconds(100), "waited the whole timeout, took \(elapsed)")
            #expect(elapsed < .seconds(3), "did not hang, took \(elapsed)")
            #expect(error?.message == "another process is using the vault")
            // Issue 26, bug 2: a message an app may show carries no shell command; the path is the
            // error's, and the CLI adds its own hint (CommandHintTests).
            #expect(error?.path == path)
            #expect(error?.fix?.contains("fuser") == false)
            #expect(error?.topic == .busy)
        }

        @Test func lockHeldByChildProcessBlocksUntilTheChildIsKilled() async throws {
            let sandbox = try FileSystemSandbox()
            defer { sandbox.remove() }
            let path = sandbox.child("vault.lock")
            try FileLock.acquire(path: path, mode: .exclusive, timeout: .zero).release()

            let child = try LockHoldingChild(path: path)
            defer { child.kill() }
            try await child.waitUntilHolding(path)

            expectFileSystemError(.busy) { try FileLock.acquire(path: path, mode: .exclusive, timeout: .milliseconds(150)) }
            expectFileSystemError(.busy) { try FileLock.acquire(path: path, mode: .shared, timeout: .milliseconds(20)) }

            child.kill()
            let clock = ContinuousClock()
            let start = clock.now
            let lock = try FileLock.acquire(path: path, mode: .exclusive, timeout: .seconds(2))
            #expect(start.duration(to: clock.now) < .milliseconds(500), "a killed holder releases at once")
            lock.release()
        }
    }
}
