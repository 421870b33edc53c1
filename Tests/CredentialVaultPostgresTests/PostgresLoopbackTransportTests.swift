import CredentialVaultPostgres
import Testing

/// TLS is off only for a loopback host judged as an IP literal (`LoopbackHost`): a name that
/// starts with "127." gets TLS, and `localhost` is connected to as 127.0.0.1 (no name lookup).
/// No server needed.
@Suite struct PostgresLoopbackTransportTests {
    @Test(arguments: ["127.db.example", "127.0.0.08", "127.1", "db.example", "[::ffff:127.0.0.1]"])
    func anythingButALoopbackLiteralRequiresTLS(host: String) throws {
        let configuration = try PostgresStoreConfiguration(url: "postgres://vault@\(host):5432/vault", environment: [:])
        #expect(configuration.transport == .tlsRequired, "\(host)")
        #expect(configuration.connectionHost == configuration.host)
    }

    @Test(arguments: [("127.0.0.1", "127.0.0.1"), ("localhost", "127.0.0.1"), ("[::1]", "::1"), ("127.8.9.10", "127.8.9.10")])
    func loopbackLiteralsGoPlainToTheLiteral(host: String, address: String) throws {
        let configuration = try PostgresStoreConfiguration(url: "postgres://vault@\(host):5432/vault", environment: [:])
        #expect(configuration.transport == .plainLoopback)
        #expect(configuration.connectionHost == address)
    }
}
