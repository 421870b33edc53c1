import Foundation
import Testing

/// A streaming-replication hot standby of a private server (`scripts/postgres-server standby`):
/// once it streams, the primary's commits wait for it (synchronous_standby_names '*',
/// synchronous_commit on, as docs/FORMAT.md "Several hosts" says a failover needs).
final class PrivatePostgresStandby {
    let directory: String
    let url: String
    /// The standby's port on 127.0.0.1.
    let port: Int

    init(of primary: PrivatePostgresServer) throws {
        directory = NSTemporaryDirectory() + "vault-pg-standby-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        url = try PostgresServer.script(["standby", primary.directory, directory])
        port = try PrivatePostgresServer.port(in: directory)
    }

    /// Makes it a primary (pg_ctl promote -w: returns once it accepts writes).
    func promote() throws { try PostgresServer.script(["promote", directory]) }

    func cleanUp() {
        _ = try? PostgresServer.script(["stop", directory, "immediate"])
        try? FileManager.default.removeItem(atPath: directory)
    }
}

extension PrivatePostgresServer {
    /// Stops the server with pg_ctl's shutdown `mode` ("immediate": a crash, nothing flushed or said to clients).
    func stop(mode: String) throws { try PostgresServer.script(["stop", directory, mode]) }

    /// A switchover's old primary: stops (fast) and starts again as a hot standby of `primary`
    /// (a promoted standby of this server).
    func follow(_ primary: PrivatePostgresStandby) throws { try PostgresServer.script(["follow", directory, primary.directory]) }

    /// The server's port on 127.0.0.1.
    var port: Int { get throws { try Self.port(in: directory) } }

    /// The port that scripts/postgres-server wrote in `directory`.
    static func port(in directory: String) throws -> Int {
        let text = try String(contentsOfFile: directory + "/port", encoding: .utf8)
        guard let port = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw TestFailure("no port in \(directory)/port")
        }
        return port
    }

    /// A libpq URL of several hosts, with this server's user: `postgres://USER@127.0.0.1:P1,127.0.0.1:P2/vault`.
    func url(ports: [Int]) -> String {
        let user = url.dropFirst("postgres://".count).prefix { $0 != "@" }
        return "postgres://\(user)@" + ports.map { "127.0.0.1:\($0)" }.joined(separator: ",") + "/vault"
    }
}
