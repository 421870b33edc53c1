#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The process at the other end of an accepted connection, held by a pidfd where the kernel gives
/// one (`SO_PEERPIDFD`, Linux 6.5), so that what `/proc/PID` shows can be tied to that process.
///
/// A PID is only a number: once the peer exits, the number can name another process. A pidfd names
/// the process itself, and becomes readable (`poll`) when it exits. So `/proc/PID` read while the
/// pidfd shows the process alive *after* the reads was that process's: a PID cannot be reused
/// before its process has exited. Where there is no pidfd, the start time read before and after
/// stands in (`AgentCaller.identify`).
final class AgentPeer: Sendable {
    /// The peer's PID in the agent's PID namespace (`SO_PEERCRED`); 0 when it has none there.
    let pid: Int32
    /// The peer's pidfd; -1 without one.
    private let pidfd: Int32
    /// The kernel knows SO_PEERPIDFD but the peer was gone when it was asked.
    let goneAtAccept: Bool

    /// `SO_PEERPIDFD` (asm-generic/socket.h); Swift's Glibc module does not export it.
    private static let peerPIDFDOption: Int32 = 77

    /// Takes the peer of `socket`: its PID and, where the kernel has `SO_PEERPIDFD`, a pidfd.
    init(socket: Int32, pid: Int32) {
        self.pid = pid
        var descriptor: Int32 = -1
        var length = socklen_t(MemoryLayout<Int32>.size)
        let asked = getsockopt(socket, SOL_SOCKET, Self.peerPIDFDOption, &descriptor, &length)
        let code = errno
        if asked == 0, descriptor >= 0 {
            _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
            pidfd = descriptor
            goneAtAccept = false
        } else {
            pidfd = -1
            // ENOPROTOOPT (or EINVAL): a kernel without the option; anything else (ESRCH): no such process any more.
            goneAtAccept = asked != 0 && code != ENOPROTOOPT && code != EINVAL
        }
    }

    deinit {
        if pidfd >= 0 { _ = close(pidfd) }
    }

    /// Whether the peer has exited (nil without a pidfd: not known).
    func hasExited() -> Bool? {
        guard pidfd >= 0 else { return nil }
        var poller = pollfd(fd: pidfd, events: Int16(POLLIN), revents: 0)
        let ready = poll(&poller, 1, 0)
        // A failed poll on our own pidfd cannot tell: count it as exited, so /proc is not trusted.
        return ready != 0
    }
}
