#if canImport(Glibc)
import Glibc
#endif
import CredentialVault

/// Who is at the other end of a loopback TCP connection: the uid that owns the peer's socket, as
/// the kernel reports it. Nothing the peer sends can change it. The peer's socket is looked up by
/// its exact address pair through the socket-diagnostics netlink API (`SocketDiagnostics`); only
/// where that API cannot be used are the socket tables read (`/proc/net/tcp`, and `/proc/net/tcp6`
/// for a client that reached 127.0.0.1 through an IPv4-mapped IPv6 socket). Either way a socket
/// counts only when it is ESTABLISHED and held by a process (a non-zero inode): the kernel reports
/// uid 0 for a TIME_WAIT socket and for one closed by its peer before the accept (FIN_WAIT2 without
/// an owner), which would otherwise pass for root's.
enum LoopbackPeer {
    /// The largest socket table read (a busy host has a few thousand sockets, ~150 bytes each).
    static let maximumTableBytes = 16 << 20

    /// The uid owning the peer's socket of the accepted connection `descriptor`; nil when it cannot
    /// be told (the peer is gone or closed, or the kernel cannot be asked): the caller then refuses.
    static func ownerUID(of descriptor: Int32) -> uid_t? {
        guard let local = endpoint(descriptor, peer: false), let peer = endpoint(descriptor, peer: true) else { return nil }
        // The peer's own socket: its local address is our peer address, its remote one our local address.
        switch SocketDiagnostics.lookUp(local: peer, remote: local) {
        case .found(let entry): return ownerUID(of: entry)
        case .notFound, .unavailable: break   // ENOENT is also the answer of a kernel without tcp_diag
        }
        return ownerUIDFromTables(local: text(peer), remote: text(local))
    }

    /// The owner of a socket the kernel described: only an ESTABLISHED socket a process holds counts.
    static func ownerUID(of entry: SocketDiagnostics.Entry) -> uid_t? {
        entry.state == SocketDiagnostics.established && entry.inode != 0 ? entry.uid : nil
    }

    /// The same answer from `/proc/net/tcp` and `tcp6` (`ADDR:PORT` hex as the kernel prints them).
    static func ownerUIDFromTables(local: String, remote: String) -> uid_t? {
        let tables = [("/proc/net/tcp", ""), ("/proc/net/tcp6", mappedPrefix)]
        for (path, prefix) in tables {
            guard let table = readTable(path) else { continue }
            if let uid = uid(in: table, local: prefix + local, remote: prefix + remote) { return uid }
        }
        return nil
    }

    /// `::ffff:` of an IPv4-mapped address as the kernel prints it: three 32-bit words in host order.
    private static let mappedPrefix = "00000000" + "00000000" + hex(UInt32(0x0000_FFFF).bigEndian, digits: 8)

    /// The uid column of the row whose local and remote addresses are `local` and `remote`
    /// (`ADDR:PORT`, hex as the kernel prints them), when that row is ESTABLISHED (`st` 01) with a
    /// non-zero inode; nil for no such row.
    static func uid(in table: String, local: String, remote: String) -> uid_t? {
        for line in table.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count > 9, fields[1] == local, fields[2] == remote, let uid = UInt32(fields[7]) else { continue }
            return fields[3] == "01" && fields[9] != "0" ? uid : nil
        }
        return nil
    }

    /// One end of an IPv4 connection (`getsockname`, or `getpeername` for the peer).
    private static func endpoint(_ descriptor: Int32, peer: Bool) -> SocketDiagnostics.IPv4End? {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let result = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                peer ? getpeername(descriptor, $0, &length) : getsockname(descriptor, $0, &length)
            }
        }
        guard result == 0, address.sin_family == sa_family_t(AF_INET) else { return nil }
        let bytes = withUnsafeBytes(of: address.sin_addr.s_addr) { Array($0) }
        return SocketDiagnostics.IPv4End(address: (bytes[0], bytes[1], bytes[2], bytes[3]), port: UInt16(bigEndian: address.sin_port))
    }

    /// `ADDR:PORT` as the socket tables print it: the address's 32 bits read in host order, the
    /// port as a number, both in upper-case hex.
    private static func text(_ end: SocketDiagnostics.IPv4End) -> String {
        let raw = [end.address.0, end.address.1, end.address.2, end.address.3].withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) }
        return hex(raw, digits: 8) + ":" + hex(UInt32(end.port), digits: 4)
    }

    private static func hex(_ value: UInt32, digits: Int) -> String {
        let text = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, digits - text.count)) + text
    }

    private static func readTable(_ path: String) -> String? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while bytes.count < maximumTableBytes {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { break }
            bytes += chunk[0..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
