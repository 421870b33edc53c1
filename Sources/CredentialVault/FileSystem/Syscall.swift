#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The one place that calls the C file API.
///
/// Every wrapper retries on `EINTR` where that is safe and reports failures as
/// `SyscallError`. Typed throws keep the errno without formatting it, so callers can
/// switch on the code. `fsync` and `close` are never retried (see their docs).
enum Syscall {
    /// Opens `path`. The corresponding C function is `open(2)`.
    static func openFile(_ path: String, _ flags: Int32, mode: mode_t = 0) throws(SyscallError) -> Int32 {
        try retryingOnInterrupt("open") { open(path, flags, mode) }
    }

    /// Opens `name` relative to the directory `directory`. The C function is `openat(2)`.
    static func openFile(_ name: String, in directory: Int32, _ flags: Int32, mode: mode_t = 0) throws(SyscallError) -> Int32 {
        try retryingOnInterrupt("openat") { openat(directory, name, flags, mode) }
    }

    /// Closes a descriptor. The C function is `close(2)`.
    ///
    /// Not retried on EINTR: on Linux the descriptor is released even then, and a retry
    /// could close a descriptor another thread has just been given.
    static func closeDescriptor(_ descriptor: Int32) throws(SyscallError) {
        guard close(descriptor) == 0 else { throw SyscallError(call: "close", code: errno) }
    }

    /// Status of an open descriptor. The C function is `fstat(2)`.
    static func status(of descriptor: Int32) throws(SyscallError) -> stat {
        var result = stat()
        _ = try retryingOnInterrupt("fstat") { fstat(descriptor, &result) }
        return result
    }

    /// Status of `path` itself, not what a symlink points to. The C function is `lstat(2)`.
    static func linkStatus(_ path: String) throws(SyscallError) -> stat {
        var result = stat()
        _ = try retryingOnInterrupt("lstat") { lstat(path, &result) }
        return result
    }

    /// Status of `name` in `directory`, not following a symlink. The C function is `fstatat(2)`.
    static func linkStatus(_ name: String, in directory: Int32) throws(SyscallError) -> stat {
        var result = stat()
        _ = try retryingOnInterrupt("fstatat") { fstatat(directory, name, &result, AT_SYMLINK_NOFOLLOW) }
        return result
    }

    /// Sets the permission bits of an open file, ignoring the umask. The C function is `fchmod(2)`.
    static func setMode(of descriptor: Int32, _ mode: mode_t) throws(SyscallError) {
        _ = try retryingOnInterrupt("fchmod") { fchmod(descriptor, mode) }
    }

    /// Sets the length of an open file. The C function is `ftruncate(2)`.
    static func truncateFile(_ descriptor: Int32, length: Int) throws(SyscallError) {
        _ = try retryingOnInterrupt("ftruncate") { ftruncate(descriptor, off_t(length)) }
    }

    /// Creates the directory `name` in the open directory `directory`. The C function is `mkdirat(2)`.
    ///
    /// There is deliberately no path-based `mkdir`/`chmod`: a directory is created relative to
    /// an open parent, then opened with `O_NOFOLLOW` and fixed up with `fchmod`, so a symlink
    /// swapped in between cannot redirect the mode change.
    static func makeDirectory(_ name: String, in directory: Int32, mode: mode_t) throws(SyscallError) {
        _ = try retryingOnInterrupt("mkdirat") { mkdirat(directory, name, mode) }
    }

    /// The absolute path of an existing `path` with every symlink, "." and ".." resolved.
    /// The C function is `realpath(3)`.
    static func canonicalPath(_ path: String) throws(SyscallError) -> String {
        guard let resolved = realpath(path, nil) else { throw SyscallError(call: "realpath", code: errno) }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// Writes all of `bytes`, continuing after partial writes. The C functions are
    /// `write(2)`, or `pwrite(2)` when `offset` is given.
    static func writeAll(_ descriptor: Int32, _ bytes: ArraySlice<UInt8>, at offset: Int? = nil) throws(SyscallError) {
        if let injected = IOFaultInjection.failingWritesErrno {
            throw SyscallError(call: offset == nil ? "write" : "pwrite", code: injected)
        }
        let failure = bytes.withUnsafeBytes { buffer -> SyscallError? in
            guard let base = buffer.baseAddress else { return nil }
            var done = 0
            while done < buffer.count {
                let outcome = attempt(offset == nil ? "write" : "pwrite") {
                    if let offset { return pwrite(descriptor, base + done, buffer.count - done, off_t(offset + done)) }
                    return write(descriptor, base + done, buffer.count - done)
                }
                let written: Int
                switch outcome {
                case .success(let count): written = count
                case .failure(let error): return error
                }
                // write(2) returns 0 only for a zero count; anything else would loop forever.
                guard written > 0 else { return SyscallError(call: "write", code: EIO) }
                done += written
            }
            return nil
        }
        if let failure { throw failure }
    }

    /// Reads until end of file, failing with `EFBIG` once more than `limit` bytes arrive.
    /// The C function is `read(2)`.
    static func readAll(_ descriptor: Int32, expectedCount: Int, limit: Int,
                        stoppingAt stop: Int? = nil) throws(SyscallError) -> [UInt8] {
        // Read straight into a buffer of the expected size (+1 byte, to see the end of file in
        // the same loop); only a file that grew after fstat falls back to reading in chunks.
        // With `stop`, reads at most that many bytes and returns them (a prefix).
        let capacity = stop.map { min($0, limit) } ?? (min(max(expectedCount, 0), limit) + 1)
        var failure: SyscallError?
        var result = [UInt8](unsafeUninitializedCapacity: capacity) { buffer, initialized in
            initialized = 0
            guard let base = buffer.baseAddress else { return }
            while initialized < buffer.count {
                let remaining = buffer.count - initialized
                switch attempt("read", { read(descriptor, base + initialized, remaining) }) {
                case let .success(count):
                    if count == 0 { return }
                    initialized += count
                case let .failure(error):
                    failure = error
                    return
                }
            }
        }
        if let failure { throw failure }
        guard stop == nil, result.count == capacity else { return result }
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let outcome = chunk.withUnsafeMutableBytes { buffer in
                attempt("read") { read(descriptor, buffer.baseAddress, buffer.count) }
            }
            let count = try outcome.get()
            if count == 0 { break }
            guard result.count + count <= limit else { throw SyscallError(call: "read", code: EFBIG) }
            result.append(contentsOf: chunk[0..<count])
        }
        guard result.count <= limit else { throw SyscallError(call: "read", code: EFBIG) }
        return result
    }

    /// Moves the read position back to the start. The C function is `lseek(2)`.
    static func rewind(_ descriptor: Int32) throws(SyscallError) {
        guard lseek(descriptor, 0, SEEK_SET) == 0 else { throw SyscallError(call: "lseek", code: errno) }
    }

    /// Flushes a file or directory to stable storage. The C function is `fsync(2)`.
    ///
    /// Never retried: after a failed fsync the kernel may have dropped the dirty pages,
    /// so a second call can succeed without the data being on disk.
    static func synchronize(_ descriptor: Int32) throws(SyscallError) {
        guard fsync(descriptor) == 0 else { throw SyscallError(call: "fsync", code: errno) }
    }

    /// Renames within one directory, replacing `newName`. The C function is `renameat(2)`.
    static func renameEntry(_ oldName: String, to newName: String, in directory: Int32) throws(SyscallError) {
        _ = try retryingOnInterrupt("renameat") { renameat(directory, oldName, directory, newName) }
    }

    /// Removes a non-directory entry. The C function is `unlinkat(2)`.
    static func unlinkEntry(_ name: String, in directory: Int32) throws(SyscallError) {
        _ = try retryingOnInterrupt("unlinkat") { unlinkat(directory, name, 0) }
    }

    /// Takes or drops an advisory lock. The C function is `flock(2)`.
    static func lockFile(_ descriptor: Int32, _ operation: Int32) throws(SyscallError) {
        _ = try retryingOnInterrupt("flock") { flock(descriptor, operation) }
    }

    /// Names in a directory (without "." and ".."). The C functions are `fdopendir(3)` and `readdir(3)`.
    static func entries(of directory: Int32) throws(SyscallError) -> [String] {
        // fdopendir takes ownership of its descriptor, so give it a duplicate.
        let copy = try retryingOnInterrupt("dup") { fcntl(directory, F_DUPFD_CLOEXEC, 0) }
        guard let stream = fdopendir(copy) else {
            let code = errno
            _ = close(copy)
            throw SyscallError(call: "fdopendir", code: code)
        }
        defer { closedir(stream) }
        rewinddir(stream)
        var names = [String]()
        while true {
            errno = 0
            guard let entry = readdir(stream) else {
                if errno != 0 { throw SyscallError(call: "readdir", code: errno) }
                return names
            }
            let name = withUnsafePointer(to: entry.pointee.d_name) { tuple in
                tuple.withMemoryRebound(to: CChar.self, capacity: MemoryLayout.size(ofValue: tuple.pointee)) {
                    String(cString: $0)
                }
            }
            if name != "." && name != ".." { names.append(name) }
        }
    }

    /// Sleeps the calling thread. The C function is `nanosleep(2)`; an early wake-up is harmless.
    static func pause(milliseconds: Int) {
        var request = timespec(tv_sec: milliseconds / 1000, tv_nsec: (milliseconds % 1000) * 1_000_000)
        _ = nanosleep(&request, nil)
    }

    /// Runs `body` until it returns something other than -1 with `errno == EINTR`.
    private static func retryingOnInterrupt<Value: BinaryInteger>(
        _ call: String, _ body: () -> Value
    ) throws(SyscallError) -> Value {
        try attempt(call, body).get()
    }

    /// `retryingOnInterrupt` as a `Result`, for use inside buffer closures.
    private static func attempt<Value: BinaryInteger>(
        _ call: String, _ body: () -> Value
    ) -> Result<Value, SyscallError> {
        while true {
            let result = body()
            if result != -1 { return .success(result) }
            let code = errno
            if code != EINTR { return .failure(SyscallError(call: call, code: code)) }
        }
    }
}
