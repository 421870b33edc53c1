#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
import TestScheduling
@testable import VaultCLI

/// `AgentPeer(pid:pidfd:)`: a peer known from the bus (`GetConnectionCredentials`). Its pidfd is a
/// duplicate the peer owns (that it shows an exit is `AgentPeerTests`' part); without one the start time stands in; one that cannot be duplicated
/// leaves the peer unidentified.
@Suite(.blockingWork, .serialized) struct AgentPeerFromBusTests {
    /// A pidfd of this process: `SO_PEERPIDFD` (77) on one end of a socket pair this process made.
    static func ownPidfd() -> Int32 {
        var ends: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &ends) == 0 else { return -1 }
        defer { close(ends[0]); close(ends[1]) }
        var descriptor: Int32 = -1
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(ends[0], SOL_SOCKET, 77, &descriptor, &length) == 0 else { return -1 }
        return descriptor
    }

    @Test func aPidfdFromTheBusIsDuplicatedAndOwnedByThePeer() throws {
        let descriptor = Self.ownPidfd()
        try #require(descriptor >= 0, "SO_PEERPIDFD: errno \(errno) (Linux 6.5 and later)")
        let peer = AgentPeer(pid: getpid(), pidfd: descriptor)
        // The caller closes its own descriptor; the peer keeps its duplicate.
        close(descriptor)
        #expect(!peer.goneAtAccept)
        #expect(peer.hasExited() == false)
        let caller = AgentCaller.identify(peer)
        #expect(caller.identified)
        #expect(caller.executables.first ?? nil != nil, "this process's own executable is readable")
    }

    @Test func withoutAPidfdTheStartTimeStandsIn() {
        let peer = AgentPeer(pid: getpid(), pidfd: nil)
        #expect(!peer.goneAtAccept)
        #expect(peer.hasExited() == nil)
        let caller = AgentCaller.identify(peer)
        #expect(caller.identified, "this process, identified by its start time")
        #expect(caller.pid == getpid())
    }

    @Test func aPidfdThatCannotBeDuplicatedLeavesThePeerUnidentified() {
        let peer = AgentPeer(pid: getpid(), pidfd: -1)
        #expect(peer.goneAtAccept)
        #expect(!AgentCaller.identify(peer).identified)
    }
}
