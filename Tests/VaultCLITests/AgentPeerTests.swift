#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CredentialVault
import Foundation
import Testing
import TestScheduling
@testable import VaultCLI

/// `AgentCaller.identify` on a real connection: a live peer is identified; a peer that exited
/// before it was identified is not (its pidfd says so), whatever its PID names by then. And what
/// `SO_PEERPIDFD`'s answers mean: only "no such option" falls back to the start time.
@Suite(.blockingWork, .serialized) struct AgentPeerTests {
    /// A listening socket in a fresh folder; `body` gets its path and descriptor.
    static func withListener(_ body: (String, Int32) throws -> Void) throws {
        let sandbox = try CLISandbox()
        defer { sandbox.cleanUp() }
        let path = sandbox.path("peer.sock")
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in path.utf8.enumerated() where index < raw.count - 1 { raw[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0, listen(listener, 4) == 0 else { throw CLITestFailure("bind: \(errno)") }
        try body(path, listener)
    }

    /// Starts python3 connecting to `path`, then waiting for `wait` seconds (0: exiting at once).
    static func connect(_ path: String, staying wait: Double) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-c", "import socket, sys, time; s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); time.sleep(float(sys.argv[2]))",
                             path, String(wait)]
        try process.run()
        return process
    }

    static func accepted(_ listener: Int32) throws -> (Int32, Int32) {
        var poller = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, 20_000) == 1 else { throw CLITestFailure("no connection") }
        let client = accept(listener, nil, nil)
        guard client >= 0, let peer = AgentSocketPath.peerCredentials(client)?.pid else { throw CLITestFailure("accept: \(errno)") }
        return (client, peer)
    }

    /// Review F1: 6.5 to 6.14 answer `EINVAL` for a peer that exited and was reaped; taking it for
    /// "no such option" read `/proc` of whatever process had the PID by then. Only `ENOPROTOOPT`
    /// means a kernel without `SO_PEERPIDFD` (this machine's kernel cannot show the others).
    @Test(arguments: [EINVAL, ESRCH, ENOENT, ENODATA, EMFILE, ENFILE, EFAULT, EPERM])
    func everyFailureButNoSuchOptionLeavesThePeerUnidentified(error: Int32) {
        #expect(AgentPeer.PIDFDAnswer(returned: -1, descriptor: -1, error: error) == .gone)
    }

    @Test func onlyNoSuchOptionFallsBackToTheStartTime() {
        #expect(AgentPeer.PIDFDAnswer(returned: -1, descriptor: -1, error: ENOPROTOOPT) == .unsupported)
        #expect(AgentPeer.PIDFDAnswer(returned: 0, descriptor: 7, error: 0) == .pidfd(7))
        #expect(AgentPeer.PIDFDAnswer(returned: 0, descriptor: -1, error: 0) == .gone, "success without a descriptor holds nothing")
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/python3")))
    func aLivePeerIsIdentified() throws {
        try Self.withListener { path, listener in
            let process = try Self.connect(path, staying: 30)
            defer { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() }
            let (client, pid) = try Self.accepted(listener)
            defer { close(client) }
            let caller = AgentCaller.identify(AgentPeer(socket: client, pid: pid))
            #expect(caller.identified)
            #expect(caller.pid == process.processIdentifier)
            #expect(caller.personality == "python3")
            #expect(caller.executables.count >= 2, "the caller and its ancestors: \(caller.description)")
        }
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/python3")))
    func aPeerThatExitedBeforeItWasIdentifiedIsNot() throws {
        try Self.withListener { path, listener in
            let process = try Self.connect(path, staying: 0)
            process.waitUntilExit()   // exited and reaped: its PID may name any process now
            let (client, pid) = try Self.accepted(listener)
            defer { close(client) }
            let caller = AgentCaller.identify(AgentPeer(socket: client, pid: pid))
            #expect(!caller.identified, "\(caller.description)")
            #expect(caller.executables.isEmpty && caller.personality.isEmpty)
            #expect(caller.description.contains("unidentified"))
        }
    }
}
