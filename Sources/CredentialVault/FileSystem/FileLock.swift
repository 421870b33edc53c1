#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import FoundationEssentials
import Synchronization

/// An advisory `flock(2)` lock on a separate lock file, released by `release()` or deinit.
///
/// `flock` locks belong to the open file description, not to the process: two `FileLock`s
/// on the same path in one process exclude each other just as two processes do (each
/// `acquire` opens the file anew). A thread that already holds a lock and acquires it
/// again therefore waits for itself until the timeout; in-process callers must serialise
/// (the store does so with an actor). A process that dies, even by `kill -9`, loses its
/// locks with its descriptors, so a crashed holder never blocks the next run.
///
/// The lock file is never deleted: deleting it would let one process lock the old inode
/// while another creates and locks a new file at the same path.
///
/// Sendable: the only mutable state, the descriptor, lives in a `Mutex`.
final class FileLock: Sendable {
    /// How the lock is shared.
    enum Mode: Sendable {
        /// Many holders at once (`LOCK_SH`), for readers.
        case shared
        /// One holder (`LOCK_EX`), for writers.
        case exclusive

        /// The `flock` operation.
        fileprivate var operation: Int32 { self == .shared ? LOCK_SH : LOCK_EX }
    }

    /// The lock file.
    let path: String
    /// The mode it was taken in.
    let mode: Mode
    /// The open lock file, or -1 once released.
    private let descriptor: Mutex<Int32>

    /// Wraps a descriptor that already holds the lock.
    private init(path: String, mode: Mode, descriptor: Int32) {
        self.path = path
        self.mode = mode
        self.descriptor = Mutex(descriptor)
    }

    /// Opens (creating it 0600 if needed) the lock file and takes the lock, polling
    /// `LOCK_NB` with sleeps growing from 1 ms to 20 ms until `timeout` has passed.
    ///
    /// Blocks the calling thread while it waits.
    /// - Parameters:
    ///   - path: the lock file; a symlink or a file of another user is refused.
    ///   - mode: `.shared` or `.exclusive`.
    ///   - timeout: how long to wait for other holders; zero tries once.
    /// - Returns: the held lock.
    /// - Throws: `VaultError` `.busy` after the timeout, `.insecurePermissions` for a
    ///   symlink or an unsafe lock file, `.io` for other system errors.
    static func acquire(path: String, mode: Mode, timeout: Duration) throws -> FileLock {
        let file = try openLockFile(path)
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        var pause = 1
        while true {
            do {
                try Syscall.lockFile(file.raw, mode.operation | LOCK_NB)
                return FileLock(path: path, mode: mode, descriptor: file.take())
            } catch {
                guard error.code == EWOULDBLOCK else { throw error.vaultError("locking the lock file", path: path) }
            }
            let remaining = clock.now.duration(to: deadline)
            guard remaining > .zero else {
                // A message an app may show its users: no shell command in it (the CLI adds its own hint).
                throw VaultError(.busy, "another process is using the vault", path: path,
                                 fix: "wait a moment and try again", topic: .busy)
            }
            let remainingMilliseconds = Int(remaining.components.seconds * 1000
                + remaining.components.attoseconds / 1_000_000_000_000_000) + 1
            Syscall.pause(milliseconds: min(pause, remainingMilliseconds))
            pause = min(pause * 2, 20)
        }
    }

    /// Drops the lock and closes the lock file; later calls do nothing.
    func release() {
        let raw = descriptor.withLock { descriptor in
            defer { descriptor = -1 }
            return descriptor
        }
        guard raw >= 0 else { return }
        // Closing the only descriptor of the open file description releases the lock;
        // the explicit LOCK_UN only makes that visible in traces.
        try? Syscall.lockFile(raw, LOCK_UN)
        try? Syscall.closeDescriptor(raw)
    }

    /// Whether the lock is still held by this object.
    var isHeld: Bool {
        descriptor.withLock { $0 >= 0 }
    }

    /// Releases the lock if `release()` was not called.
    deinit { release() }

    /// Opens or creates the lock file: never through a symlink, a regular file of ours,
    /// mode forced to 0600.
    private static func openLockFile(_ path: String) throws -> OwnedDescriptor {
        let raw: Int32
        do {
            raw = try Syscall.openFile(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK,
                                       mode: SecureFileSystem.privateFileMode)
        } catch {
            switch error.code {
            case ELOOP: throw VaultError.symbolicLink(path)
            case ENOENT: throw VaultError.fileNotFound(path)
            default: throw error.vaultError("opening the lock file", path: path)
            }
        }
        let file = OwnedDescriptor(raw)
        let status: stat
        do {
            status = try Syscall.status(of: file.raw)
        } catch {
            throw error.vaultError("checking the lock file", path: path)
        }
        try PrivacyCheck.requireOwnedRegularFile(status, path: path)
        do {
            try Syscall.setMode(of: file.raw, SecureFileSystem.privateFileMode)
        } catch {
            throw error.vaultError("setting the lock file's mode to 0600", path: path)
        }
        return file
    }
}
