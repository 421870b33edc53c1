#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An open file descriptor that is closed exactly once: by `close()` when the caller
/// needs to see the error (a written file), otherwise when it goes out of scope.
struct OwnedDescriptor: ~Copyable {
    /// The raw descriptor, valid while `self` lives.
    let raw: Int32

    /// Takes ownership of `raw`.
    init(_ raw: Int32) { self.raw = raw }

    /// Closes and reports the error, which for a written file can be a lost write (NFS, EIO).
    consuming func close() throws(SyscallError) {
        let raw = self.raw
        discard self
        try Syscall.closeDescriptor(raw)
    }

    /// Hands the descriptor to a new owner without closing it.
    consuming func take() -> Int32 {
        let raw = self.raw
        discard self
        return raw
    }

    /// Closes the descriptor if `close()` or `take()` did not.
    deinit {
        // Errors are ignored here on purpose: only read-only or already-synced descriptors
        // are left to deinit; writers call close() and check it.
        try? Syscall.closeDescriptor(raw)
    }
}
