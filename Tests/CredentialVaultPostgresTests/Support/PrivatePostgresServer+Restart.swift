import Testing

/// The fault tests' restarts of a private server.
extension PrivatePostgresServer {
    /// Stops the server with pg_ctl's shutdown `mode` ("fast": backends end cleanly, a checkpoint;
    /// "immediate": a crash, the start replays the WAL) and starts it on the same port.
    func restart(mode: String) throws { try PostgresServer.script(["restart", directory, mode]) }
}
