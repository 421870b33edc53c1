#if canImport(Glibc)
import Glibc
#endif
@testable import CredentialVaultOAuth
import Foundation
import Testing
import TestScheduling

/// `LoopbackPeer` finds the uid of a loopback connection's other end through the kernel's
/// socket-diagnostics netlink API (and the socket tables where it cannot be used), for an IPv4
/// client and for an IPv6 socket that reached 127.0.0.1 as `::ffff:127.0.0.1`; a peer that closed
/// before the accept is nobody's (the other uid's case runs as uid 65534 in `LoopbackUserTests`).
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

    /// A client connected to 127.0.0.1:`port`.
    static func connectedClient(_ port: UInt16) throws -> Int32 {
        let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = in_addr_t(0x7F00_0001).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(client, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        try #require(client >= 0 && connected == 0)
        return client
    }

    /// One end of the connection `descriptor` (`peer`: the other end) as `SocketDiagnostics` takes it.
    static func end(_ descriptor: Int32, peer: Bool) throws -> SocketDiagnostics.IPv4End {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let result = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                peer ? getpeername(descriptor, $0, &length) : getsockname(descriptor, $0, &length)
            }
        }
        try #require(result == 0)
        let bytes = withUnsafeBytes(of: address.sin_addr.s_addr) { Array($0) }
        return .init(address: (bytes[0], bytes[1], bytes[2], bytes[3]), port: UInt16(bigEndian: address.sin_port))
    }

    @Test("an IPv4 client of this process is this uid: the netlink lookup finds its exact socket (established, its inode)")
    func ipv4() throws {
        let (server, port) = try Self.listener()
        defer { close(server) }
        let client = try Self.connectedClient(port)
        defer { close(client) }
        let accepted = accept(server, nil, nil)
        defer { close(accepted) }
        var status = stat()
        try #require(fstat(client, &status) == 0)
        let answer = SocketDiagnostics.lookUp(local: try Self.end(accepted, peer: true), remote: try Self.end(accepted, peer: false))
        #expect(answer == .found(.init(state: SocketDiagnostics.established, uid: geteuid(), inode: UInt32(truncatingIfNeeded: status.st_ino))))
        // Our own end, asked for the other way round, is another socket (the accepted one).
        var own = stat()
        try #require(fstat(accepted, &own) == 0)
        let reverse = SocketDiagnostics.lookUp(local: try Self.end(accepted, peer: false), remote: try Self.end(accepted, peer: true))
        #expect(reverse == .found(.init(state: SocketDiagnostics.established, uid: geteuid(), inode: UInt32(truncatingIfNeeded: own.st_ino))))
        #expect(LoopbackPeer.ownerUID(of: accepted) == geteuid())
        #expect(LoopbackRedirectListener.peerIsThisUser(accepted))
    }

    /// Review finding F3: a client that connects and closes before the accept leaves a socket the
    /// kernel reports as uid 0 with inode 0 (FIN_WAIT2 without an owner, then TIME_WAIT); its
    /// request still waits in the listener's buffer. A listener run as root took it for root's.
    @Test("a peer that closed before the accept is nobody's, through netlink and through the tables (root: not taken for uid 0)")
    func peerClosedBeforeAcceptIsRefused() throws {
        let (server, port) = try Self.listener()
        defer { close(server) }
        let client = try Self.connectedClient(port)
        let request = Array("GET /callback?state=x&code=y HTTP/1.1\r\n\r\n".utf8)
        #expect(request.withUnsafeBytes { write(client, $0.baseAddress, $0.count) } == request.count)
        close(client)
        let accepted = accept(server, nil, nil)
        try #require(accepted >= 0)
        defer { close(accepted) }
        // The client's FIN has arrived once the accepted end reads its request and then the end (bounded).
        var ended = false
        var buffer = [UInt8](repeating: 0, count: 256)
        for _ in 0..<10 where !ended {
            var entry = pollfd(fd: accepted, events: Int16(POLLIN), revents: 0)
            guard poll(&entry, 1, 1000) == 1 else { continue }
            ended = buffer.withUnsafeMutableBytes { read(accepted, $0.baseAddress, $0.count) } == 0
        }
        #expect(ended)
        let peer = try Self.end(accepted, peer: true)
        let local = try Self.end(accepted, peer: false)
        switch SocketDiagnostics.lookUp(local: peer, remote: local) {
        case .found(let found):
            #expect(found.state != SocketDiagnostics.established && found.inode == 0, "\(found)")
            #expect(LoopbackPeer.ownerUID(of: found) == nil)
        case let other:
            #expect(other == .notFound)
        }
        #expect(LoopbackPeer.ownerUID(of: accepted) == nil)
        #expect(!LoopbackRedirectListener.peerIsThisUser(accepted))
        // The tables (the fallback) say the same.
        let text = { (end: SocketDiagnostics.IPv4End) in
            String(format: "%02X%02X%02X%02X:%04X", end.address.3, end.address.2, end.address.1, end.address.0, end.port)
        }
        #expect(LoopbackPeer.ownerUIDFromTables(local: text(peer), remote: text(local)) == nil)
    }

    /// Connects to 127.0.0.1:`port` as uid 65534 and holds the connection until its standard input closes.
    static let holdConnection = """
        import socket, sys
        s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
        print("connected", flush=True)
        sys.stdin.read()
        """

    @Test("another uid's live connection is that uid's, so a root listener refuses it", .blockingWork, .enabled(if: geteuid() == 0
          && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv") && FileManager.default.isExecutableFile(atPath: "/usr/bin/python3")))
    func anotherUsersConnection() throws {
        let (server, port) = try Self.listener()
        defer { close(server) }
        let client = Process()
        client.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        client.arguments = ["--reuid=65534", "--regid=65534", "--clear-groups", "--", "/usr/bin/python3", "-c", Self.holdConnection, "\(port)"]
        let input = Pipe(), output = Pipe()
        client.standardInput = input
        client.standardOutput = output
        try client.run()
        defer { try? input.fileHandleForWriting.close(); client.waitUntilExit() }
        let line = String(decoding: output.fileHandleForReading.availableData, as: UTF8.self)
        try #require(line.hasPrefix("connected"), "\(line)")
        let accepted = accept(server, nil, nil)
        defer { close(accepted) }
        #expect(LoopbackPeer.ownerUID(of: accepted) == 65534)
        #expect(!LoopbackRedirectListener.peerIsThisUser(accepted))
    }

    @Test("the kernel's answer is read: an inet_diag_msg for the pair asked for, ENOENT, another request's or another pair's answer")
    func netlinkAnswerParsing() {
        let local = SocketDiagnostics.IPv4End(address: (127, 0, 0, 1), port: 40000)
        let remote = SocketDiagnostics.IPv4End(address: (127, 0, 0, 1), port: 8080)
        func h(_ value: UInt32) -> [UInt8] { SocketDiagnostics.hostOrder(value) }
        func h(_ value: Int32) -> [UInt8] { SocketDiagnostics.hostOrder(value) }
        func message(type: UInt16, sequence: UInt32, body: [UInt8]) -> [UInt8] {
            var bytes = h(UInt32(16 + body.count))
            bytes += SocketDiagnostics.hostOrder(type) + SocketDiagnostics.hostOrder(UInt16(0))
            bytes += h(sequence) + h(UInt32(0))
            return bytes + body
        }
        // struct inet_diag_msg: family, state, timer, retrans; the socket id; expires, rqueue, wqueue, uid, inode.
        func diag(family: UInt8 = UInt8(AF_INET), state: UInt8, uid: UInt32, inode: UInt32, local: SocketDiagnostics.IPv4End) -> [UInt8] {
            var bytes: [UInt8] = [family, state, 0, 0]
            bytes += SocketDiagnostics.socketID(family: family, local: local, remote: remote)
            bytes += h(UInt32(0)) + h(UInt32(0))
            bytes += h(UInt32(0)) + h(uid)
            return bytes + h(inode)
        }
        let established = message(type: 20, sequence: 7, body: diag(state: 1, uid: 1000, inode: 4242, local: local))
        #expect(established.count == 16 + 72)
        #expect(SocketDiagnostics.parse(established, sequence: 7, local: local, remote: remote)
                == .found(.init(state: 1, uid: 1000, inode: 4242)))
        // An IPv6 socket with IPv4-mapped addresses.
        let mapped = message(type: 20, sequence: 7, body: diag(family: UInt8(AF_INET6), state: 1, uid: 5, inode: 9, local: local))
        #expect(SocketDiagnostics.parse(mapped, sequence: 7, local: local, remote: remote) == .found(.init(state: 1, uid: 5, inode: 9)))
        // TIME_WAIT (6): found, but nobody's.
        let timeWait = message(type: 20, sequence: 7, body: diag(state: 6, uid: 0, inode: 0, local: local))
        let found = SocketDiagnostics.parse(timeWait, sequence: 7, local: local, remote: remote)
        #expect(found == .found(.init(state: 6, uid: 0, inode: 0)))
        if case .found(let entry) = found { #expect(LoopbackPeer.ownerUID(of: entry) == nil) }
        #expect(LoopbackPeer.ownerUID(of: .init(state: 1, uid: 0, inode: 0)) == nil)
        #expect(LoopbackPeer.ownerUID(of: .init(state: 5, uid: 0, inode: 12)) == nil)
        #expect(LoopbackPeer.ownerUID(of: .init(state: 1, uid: 0, inode: 12)) == 0)
        // NLMSG_ERROR: ENOENT is "not found", anything else "unavailable".
        let missing = message(type: 2, sequence: 7, body: h(Int32(-ENOENT)) + [UInt8](repeating: 0, count: 16))
        #expect(SocketDiagnostics.parse(missing, sequence: 7, local: local, remote: remote) == .notFound)
        let refused = message(type: 2, sequence: 7, body: h(Int32(-EPERM)) + [UInt8](repeating: 0, count: 16))
        #expect(SocketDiagnostics.parse(refused, sequence: 7, local: local, remote: remote) == .unavailable)
        // Another request's answer, another socket's, a truncated one.
        #expect(SocketDiagnostics.parse(established, sequence: 8, local: local, remote: remote) == .unavailable)
        let otherPort = SocketDiagnostics.IPv4End(address: (127, 0, 0, 1), port: 40001)
        #expect(SocketDiagnostics.parse(message(type: 20, sequence: 7, body: diag(state: 1, uid: 0, inode: 1, local: otherPort)),
                                        sequence: 7, local: local, remote: remote) == .unavailable)
        #expect(SocketDiagnostics.parse(Array(established.prefix(40)), sequence: 7, local: local, remote: remote) == .unavailable)
        // The request: nlmsghdr + inet_diag_req_v2, 72 bytes, TCP, no cookie.
        let request = SocketDiagnostics.request(family: UInt8(AF_INET), local: local, remote: remote, sequence: 3)
        #expect(request.count == 72)
        #expect(SocketDiagnostics.readHost(request, 0, as: UInt32.self) == 72)
        #expect(SocketDiagnostics.readHost(request, 4, as: UInt16.self) == 20)
        #expect(request[16] == UInt8(AF_INET) && request[17] == UInt8(IPPROTO_TCP))
        #expect(Array(request[24..<28]) == [0x9C, 0x40, 0x1F, 0x90])
        #expect(Array(request[28..<32]) == [127, 0, 0, 1] && Array(request[44..<48]) == [127, 0, 0, 1])
        #expect(Array(request[64..<72]) == [UInt8](repeating: 0xFF, count: 8))
    }

    @Test("an IPv6 client reaching 127.0.0.1 as ::ffff:127.0.0.1 is this uid")
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

    @Test("a table row counts only when ESTABLISHED with an inode: TIME_WAIT and ownerless FIN_WAIT2 rows (uid 0) are nobody's")
    func rowStateAndInode() {
        let table = """
              sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
               0: 0100007F:9C40 0100007F:1F90 05 00000000:00000000 03:00000F5A 00000000     0        0 0 3 0000 100 0 0 10 -1
               1: 0100007F:9C41 0100007F:1F90 06 00000000:00000000 03:00000F5A 00000000     0        0 0 3 0000 100 0 0 10 -1
               2: 0100007F:9C42 0100007F:1F90 01 00000000:00000000 00:00000000 00000000     0        0 0 1 0000 100 0 0 10 -1
               3: 0100007F:9C43 0100007F:1F90 01 00000000:00000000 00:00000000 00000000     0        0 77 1 0000 100 0 0 10 -1
            """
        #expect(LoopbackPeer.uid(in: table, local: "0100007F:9C40", remote: "0100007F:1F90") == nil)
        #expect(LoopbackPeer.uid(in: table, local: "0100007F:9C41", remote: "0100007F:1F90") == nil)
        #expect(LoopbackPeer.uid(in: table, local: "0100007F:9C42", remote: "0100007F:1F90") == nil)
        #expect(LoopbackPeer.uid(in: table, local: "0100007F:9C43", remote: "0100007F:1F90") == 0)
    }
}
