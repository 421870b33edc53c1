#if canImport(Glibc)
import Glibc
#endif
import CredentialVault

/// Who is at the other end of a loopback TCP connection: the uid that owns the peer's socket, as
/// the kernel's socket tables show it (`/proc/net/tcp`, and `/proc/net/tcp6` for a client that
/// reached 127.0.0.1 through an IPv4-mapped IPv6 socket). Nothing the peer sends can change it.
enum LoopbackPeer {
    /// The largest socket table read (a busy host has a few thousand sockets, ~150 bytes each).
    static let maximumTableBytes = 16 << 20

    /// The uid owning the peer's socket of the accepted connection `descriptor`; nil when it cannot
    /// be told (the peer is gone, or the tables cannot be read): the caller then refuses.
    static func ownerUID(of descriptor: Int32) -> uid_t? {
        guard let local = endpoint(descriptor, peer: false), let peer = endpoint(descriptor, peer: true) else { return nil }
        // The peer's own socket: its local address is our peer address, its remote one our local address.
        let tables = [("/proc/net/tcp", "", ""), ("/proc/net/tcp6", mappedPrefix, mappedPrefix)]
        for (path, peerPrefix, localPrefix) in tables {
            guard let text = readTable(path) else { continue }
            let wanted = (peerPrefix + peer, localPrefix + local)
            if let uid = uid(in: text, local: wanted.0, remote: wanted.1) { return uid }
        }
        return nil
    }

    /// `::ffff:` of an IPv4-mapped address as the kernel prints it: three 32-bit words in host order.
    private static let mappedPrefix = "00000000" + "00000000" + hex(UInt32(0x0000_FFFF).bigEndian, digits: 8)

    /// The uid column of the row whose local and remote addresses are `local` and `remote`
    /// (`ADDR:PORT`, hex as the kernel prints them).
    static func uid(in table: String, local: String, remote: String) -> uid_t? {
        for line in table.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count > 7, fields[1] == local, fields[2] == remote, let uid = UInt32(fields[7]) else { continue }
            return uid
        }
        return nil
    }

    /// `ADDR:PORT` of one end of an IPv4 connection as the socket tables print it: the address's
    /// 32 bits read in host order, the port as a number, both in upper-case hex.
    private static func endpoint(_ descriptor: Int32, peer: Bool) -> String? {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let result = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                peer ? getpeername(descriptor, $0, &length) : getsockname(descriptor, $0, &length)
            }
        }
        guard result == 0, address.sin_family == sa_family_t(AF_INET) else { return nil }
        return hex(address.sin_addr.s_addr, digits: 8) + ":" + hex(UInt32(UInt16(bigEndian: address.sin_port)), digits: 4)
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
