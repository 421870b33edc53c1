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
/// before its process has exited. Only on a kernel without the option does the start time read
/// before and after stand in (`AgentCaller.identify`); it cannot tell a PID reused between `connect`
/// and `accept` (docs/SECURITY.md). Any other failure to get a pidfd leaves the peer unidentified.
package final class AgentPeer: Sendable {
    /// The peer's PID in the agent's PID namespace (`SO_PEERCRED`); 0 when it has none there.
    let pid: Int32
    /// The peer's pidfd; -1 without one.
    private let pidfd: Int32
    /// The kernel has `SO_PEERPIDFD` but gave no pidfd: the peer is gone (or cannot be held), so
    /// nothing read of its PID can be tied to it.
    let goneAtAccept: Bool

    /// `SO_PEERPIDFD` (asm-generic/socket.h); Swift's Glibc module does not export it.
    private static let peerPIDFDOption: Int32 = 77

    /// What `getsockopt(SO_PEERPIDFD)` answered, as the agent acts on it.
    enum PIDFDAnswer: Equatable {
        /// A pidfd of the peer.
        case pidfd(Int32)
        /// A kernel without the option (before 6.5): the start time stands in (`AgentCaller.identify`).
        case unsupported
        /// The kernel has the option and gave no pidfd: the peer is not identified.
        case gone

        /// The decision for one call's result, descriptor and `errno`.
        ///
        /// Only `ENOPROTOOPT` means a kernel without the option. Every other failure means the
        /// kernel knows the option and could not hand out a pidfd: 6.5 to 6.14 answer `EINVAL` for a
        /// peer that exited and was reaped, 6.15 `ESRCH`, a socket without a peer `ENODATA`, a full
        /// descriptor table `EMFILE`. Taking any of those for "no such option" would read `/proc` of
        /// whatever process has the PID now.
        init(returned: Int32, descriptor: Int32, error: Int32) {
            if returned == 0 {
                self = descriptor >= 0 ? .pidfd(descriptor) : .gone
            } else {
                self = error == ENOPROTOOPT ? .unsupported : .gone
            }
        }
    }

    /// Takes the peer of `socket`: its PID and, where the kernel has `SO_PEERPIDFD`, a pidfd.
    init(socket: Int32, pid: Int32) {
        self.pid = pid
        var descriptor: Int32 = -1
        var length = socklen_t(MemoryLayout<Int32>.size)
        let asked = getsockopt(socket, SOL_SOCKET, Self.peerPIDFDOption, &descriptor, &length)
        switch PIDFDAnswer(returned: asked, descriptor: descriptor, error: errno) {
        case .pidfd(let held):
            _ = fcntl(held, F_SETFD, FD_CLOEXEC)
            pidfd = held
            goneAtAccept = false
        case .unsupported:
            pidfd = -1
            goneAtAccept = false
        case .gone:
            pidfd = -1
            goneAtAccept = true
        }
    }

    /// A peer known from the bus (`GetConnectionCredentials`): its PID (`ProcessID`) and, where the
    /// bus gives one (dbus-broker, dbus-daemon 1.15.8 and later), its pidfd (`ProcessFD`), which is
    /// duplicated here and owned by this peer (the caller keeps and closes its own). Without one the
    /// start time read before and after stands in, as on a kernel without `SO_PEERPIDFD`; a pidfd
    /// that cannot be duplicated leaves the peer unidentified.
    package init(pid: Int32, pidfd: Int32?) {
        self.pid = pid
        guard let pidfd else {
            self.pidfd = -1
            goneAtAccept = false
            return
        }
        let held = fcntl(pidfd, F_DUPFD_CLOEXEC, 0)
        self.pidfd = held
        goneAtAccept = held < 0
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
