#if canImport(Glibc)
import Glibc
#endif
@testable import CredentialVaultOAuth
import Foundation
import Testing

/// `LoopbackPeer` finds the uid of a loopback connection's other end in the kernel's socket
/// tables, for an IPv4 client and for an IPv6 socket that reached 127.0.0.1 as `::ffff:127.0.0.1`
/// (the other uid's case runs as uid 65534 in `LoopbackUserTests`).
@Suite("The loopback listener's peer uid")
struct LoopbackPeerTests {
    /// A listener on 127.0.0.1 and its port.
    static func listener() throws -> (Int32, UInt16) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = in_addr_t(0x7F00_0001).bigEndian
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        try #require(fd >= 0 && bound == 0 && listen(fd, 4) == 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return (fd, UInt16(bigEndian: address.sin_port))
    }

    @Test("an IPv4 client of this process is this uid")
    func ipv4() throws {
        let (server, port) = try Self.listener()
        defer { close(server) }
        let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(client) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = in_addr_t(0x7F00_0001).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(client, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        try #require(connected == 0)
        let accepted = accept(server, nil, nil)
        defer { close(accepted) }
        #expect(LoopbackPeer.ownerUID(of: accepted) == geteuid())
        #expect(LoopbackRedirectListener.peerIsThisUser(accepted))
    }

    @Test("an IPv6 client reaching 127.0.0.1 as ::ffff:127.0.0.1 is found in /proc/net/tcp6")
    func ipv4MappedIPv6() throws {
        let (server, port) = try Self.listener()
        defer { close(server) }
        let client = socket(AF_INET6, Int32(SOCK_STREAM.rawValue), 0)
        try #require(client >= 0)
        defer { close(client) }
        var address = sockaddr_in6()
        address.sin6_family = sa_family_t(AF_INET6)
        address.sin6_port = port.bigEndian
        withUnsafeMutableBytes(of: &address.sin6_addr) { bytes in
            for (index, byte) in [UInt8](repeating: 0, count: 10).enumerated() { bytes[index] = byte }
            bytes[10] = 0xFF; bytes[11] = 0xFF; bytes[12] = 127; bytes[13] = 0; bytes[14] = 0; bytes[15] = 1
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(client, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
        }
        try #require(connected == 0)
        let accepted = accept(server, nil, nil)
        defer { close(accepted) }
        #expect(LoopbackPeer.ownerUID(of: accepted) == geteuid())
    }

    @Test("a row is matched on both addresses, never on one of them")
    func rowMatching() {
        let table = """
              sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
               0: 0100007F:9C40 0100007F:1F90 01 00000000:00000000 00:00000000 00000000  1000        0 1 1 0000 100 0 0 10 -1
               1: 0100007F:1F90 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0        0 2 1 0000 100 0 0 10 -1
            """
        #expect(LoopbackPeer.uid(in: table, local: "0100007F:9C40", remote: "0100007F:1F90") == 1000)
        #expect(LoopbackPeer.uid(in: table, local: "0100007F:1F90", remote: "0100007F:9C40") == 0)
        #expect(LoopbackPeer.uid(in: table, local: "0100007F:9C40", remote: "0100007F:1F91") == nil)
    }
}
