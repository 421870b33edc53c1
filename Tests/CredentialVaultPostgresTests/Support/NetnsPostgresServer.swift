import Foundation
import Testing
import TestScheduling

/// A PostgreSQL server of a test's own on the far side of a network namespace
/// (`scripts/netns-postgres`): reached over TLS at a 10.x.y.z address, its link cut and healed
/// by the test; stopped, with its namespace deleted, at the end.
final class NetnsPostgresServer: Sendable {
    /// Whether this process can make a network namespace (root: CAP_NET_ADMIN).
    static let canRun = getuid() == 0

    let directory: String
    let url: String
    /// The throwaway CA's certificate that signed the server's (PGSSLROOTCERT).
    var trustRootsPath: String { directory + "/ca.pem" }

    init() throws {
        directory = NSTemporaryDirectory() + "vault-pg-netns-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        do {
            url = try Self.script(["start", directory])
        } catch {
            _ = try? Self.script(["stop", directory])
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
    }

    /// Drops every packet on the link, both ways (nothing is refused).
    func cut() throws { try Self.script(["cut", directory]) }
    /// Lets packets through again.
    func heal() throws { try Self.script(["heal", directory]) }

    func cleanUp() {
        _ = try? Self.script(["stop", directory])
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Runs scripts/netns-postgres with `arguments` (bounded: 120 s); returns its stdout.
    @discardableResult
    static func script(_ arguments: [String], sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        BlockingWait.check("waiting for scripts/netns-postgres \(arguments.first ?? "")", sourceLocation: sourceLocation)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/timeout")
        process.arguments = ["120", PostgresServer.repositoryRoot + "/scripts/netns-postgres"] + arguments
        return try PostgresServer.runCapturing(process) { status, errors in
            "scripts/netns-postgres \(arguments.first ?? "") exited \(status): " + errors.suffix(1000)
        }
    }
}
