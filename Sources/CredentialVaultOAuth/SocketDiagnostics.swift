#if canImport(Glibc)
import Glibc
#endif

/// One TCP socket as the kernel's socket-diagnostics netlink API (`NETLINK_SOCK_DIAG`, inet_diag)
/// describes it, looked up by its exact address pair: no table is scanned, so nothing another
/// user opens can push it out of reach. The structures are kernel ABI (`linux/netlink.h`,
/// `linux/sock_diag.h`, `linux/inet_diag.h`); Glibc does not export them, so their bytes are laid
/// out here, field by field, in host byte order where the kernel uses it and network order for
/// ports and addresses.
enum SocketDiagnostics {
    /// What the kernel says of the socket: its TCP state (`TCP_ESTABLISHED` is 1), the uid that
    /// owns it and its inode (0 for a socket no process holds: a TIME_WAIT or orphaned FIN_WAIT2 one).
    struct Entry: Equatable {
        /// The TCP state (`idiag_state`).
        var state: UInt8
        /// The owner's uid (`idiag_uid`).
        var uid: uid_t
        /// The socket's inode (`idiag_inode`).
        var inode: UInt32
    }

    /// The outcome of one lookup.
    enum Answer: Equatable {
        /// The kernel found the socket.
        case found(Entry)
        /// The kernel answered ENOENT: no such socket, or no TCP diagnostics module to ask.
        case notFound
        /// The API could not be used (no netlink socket, a refused request, no answer in time).
        case unavailable
    }

    /// An IPv4 socket's end: the address as four bytes in network order, the port as a number.
    struct IPv4End: Equatable {
        /// The address, most significant byte first.
        var address: (UInt8, UInt8, UInt8, UInt8)
        /// The port.
        var port: UInt16

        static func == (lhs: IPv4End, rhs: IPv4End) -> Bool {
            lhs.address == rhs.address && lhs.port == rhs.port
        }
    }

    // Kernel constants (linux/netlink.h, linux/sock_diag.h, linux/inet_diag.h, linux/tcp.h).
    static let netlinkFamily: Int32 = 16           // AF_NETLINK
    static let sockDiagProtocol: Int32 = 4         // NETLINK_SOCK_DIAG
    static let sockDiagByFamily: UInt16 = 20       // SOCK_DIAG_BY_FAMILY
    static let requestFlag: UInt16 = 1             // NLM_F_REQUEST
    static let errorType: UInt16 = 2               // NLMSG_ERROR
    static let headerSize = 16                     // struct nlmsghdr
    static let requestSize = 56                    // struct inet_diag_req_v2
    static let messageSize = 72                    // struct inet_diag_msg
    static let established: UInt8 = 1              // TCP_ESTABLISHED

    /// Looks up the TCP socket whose local end is `local` and whose remote end is `remote`:
    /// as an IPv4 socket, then as an IPv6 one with IPv4-mapped addresses (`::ffff:a.b.c.d`).
    /// - Returns: the kernel's answer; `.unavailable` when netlink cannot be used at all.
    static func lookUp(local: IPv4End, remote: IPv4End, timeout: Duration = .seconds(2)) -> Answer {
        let descriptor = socket(netlinkFamily, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), sockDiagProtocol)
        guard descriptor >= 0 else { return .unavailable }
        defer { close(descriptor) }
        var wait = timeval(tv_sec: Int(timeout.components.seconds), tv_usec: Int(timeout.components.attoseconds / 1_000_000_000_000))
        guard setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size)) == 0 else {
            return .unavailable
        }
        var answer = Answer.unavailable
        for (sequence, family) in [(UInt32(1), UInt8(AF_INET)), (UInt32(2), UInt8(AF_INET6))] {
            let request = request(family: family, local: local, remote: remote, sequence: sequence)
            guard send(request, on: descriptor) else { return .unavailable }
            guard let reply = receive(on: descriptor) else { return .unavailable }
            answer = parse(reply, sequence: sequence, local: local, remote: remote)
            if answer != .notFound { return answer }
        }
        return answer
    }

    /// The request: a `nlmsghdr` (type SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST without NLM_F_DUMP:
    /// the exact socket) followed by an `inet_diag_req_v2` for TCP with the full socket id.
    static func request(family: UInt8, local: IPv4End, remote: IPv4End, sequence: UInt32) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes += hostOrder(UInt32(headerSize + requestSize))      // nlmsg_len
        bytes += hostOrder(sockDiagByFamily)                      // nlmsg_type
        bytes += hostOrder(requestFlag)                           // nlmsg_flags
        bytes += hostOrder(sequence)                              // nlmsg_seq
        bytes += hostOrder(UInt32(0))                             // nlmsg_pid
        bytes += [family, UInt8(IPPROTO_TCP), 0, 0]               // sdiag_family, sdiag_protocol, idiag_ext, pad
        bytes += hostOrder(UInt32.max)                            // idiag_states: all
        bytes += socketID(family: family, local: local, remote: remote)
        return bytes
    }

    /// `struct inet_diag_sockid`: source and destination ports (network order), source and
    /// destination addresses (16 bytes each), interface 0, cookie INET_DIAG_NOCOOKIE (not checked).
    static func socketID(family: UInt8, local: IPv4End, remote: IPv4End) -> [UInt8] {
        func address(_ end: IPv4End) -> [UInt8] {
            let four = [end.address.0, end.address.1, end.address.2, end.address.3]
            return family == UInt8(AF_INET) ? four + [UInt8](repeating: 0, count: 12)
                : [UInt8](repeating: 0, count: 10) + [0xFF, 0xFF] + four
        }
        var bytes: [UInt8] = []
        bytes += [UInt8(local.port >> 8), UInt8(local.port & 0xFF), UInt8(remote.port >> 8), UInt8(remote.port & 0xFF)]
        bytes += address(local) + address(remote)
        bytes += hostOrder(UInt32(0))                             // idiag_if
        bytes += hostOrder(UInt32.max) + hostOrder(UInt32.max)    // idiag_cookie
        return bytes
    }

    /// Reads the kernel's reply to request `sequence`: an `inet_diag_msg` for the socket asked
    /// for (its id must be the pair asked for), or an NLMSG_ERROR (ENOENT: not found).
    static func parse(_ reply: [UInt8], sequence: UInt32, local: IPv4End, remote: IPv4End) -> Answer {
        var offset = 0
        while reply.count - offset >= headerSize {
            let length = Int(readHost(reply, offset, as: UInt32.self))
            let type = readHost(reply, offset + 4, as: UInt16.self)
            guard length >= headerSize, length <= reply.count - offset else { return .unavailable }
            let body = Array(reply[(offset + headerSize)..<(offset + length)])
            if readHost(reply, offset + 8, as: UInt32.self) == sequence {
                if type == errorType {
                    guard body.count >= 4 else { return .unavailable }
                    return readHost(body, 0, as: Int32.self) == -ENOENT ? .notFound : .unavailable
                }
                if type == sockDiagByFamily, body.count >= messageSize {
                    let family = body[0]
                    guard family == UInt8(AF_INET) || family == UInt8(AF_INET6),
                          Array(body[4..<52]).prefix(36) == socketID(family: family, local: local, remote: remote).prefix(36)
                    else { return .unavailable }
                    return .found(Entry(state: body[1], uid: readHost(body, 64, as: UInt32.self),
                                        inode: readHost(body, 68, as: UInt32.self)))
                }
            }
            offset += (length + 3) & ~3                           // NLMSG_ALIGN
        }
        return .unavailable
    }

    private static func send(_ request: [UInt8], on descriptor: Int32) -> Bool {
        var kernel = [UInt8](repeating: 0, count: 12)             // struct sockaddr_nl: nl_pid 0 is the kernel
        kernel[0..<2] = ArraySlice(hostOrder(UInt16(netlinkFamily)))
        while true {
            let sent = request.withUnsafeBytes { bytes in
                kernel.withUnsafeBytes { address in
                    sendto(descriptor, bytes.baseAddress, bytes.count, 0,
                           address.baseAddress?.assumingMemoryBound(to: sockaddr.self), socklen_t(address.count))
                }
            }
            if sent < 0, errno == EINTR { continue }
            return sent == request.count
        }
    }

    /// One datagram from the kernel (a sender other than port 0 is ignored), nil on time-out or error.
    private static func receive(on descriptor: Int32) -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: 8192)
        for _ in 0..<8 {
            var sender = [UInt8](repeating: 0, count: 12)
            var senderLength = socklen_t(12)
            let count = buffer.withUnsafeMutableBytes { bytes in
                sender.withUnsafeMutableBytes { address in
                    recvfrom(descriptor, bytes.baseAddress, bytes.count, 0,
                             address.baseAddress?.assumingMemoryBound(to: sockaddr.self), &senderLength)
                }
            }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return nil }
            if sender[4..<8].allSatisfy({ $0 == 0 }) { return Array(buffer[0..<count]) }
        }
        return nil
    }

    static func hostOrder<Value: FixedWidthInteger>(_ value: Value) -> [UInt8] {
        withUnsafeBytes(of: value) { Array($0) }
    }

    static func readHost<Value: FixedWidthInteger>(_ bytes: [UInt8], _ offset: Int, as type: Value.Type) -> Value {
        var value = Value.zero
        withUnsafeMutableBytes(of: &value) { target in
            for index in 0..<target.count where offset + index < bytes.count { target[index] = bytes[offset + index] }
        }
        return value
    }
}
