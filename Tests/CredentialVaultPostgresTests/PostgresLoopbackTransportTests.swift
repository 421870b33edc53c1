@testable import CredentialVaultPostgres
import VaultCrypto
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

/// docs/FORMAT.md's sizes for the PostgreSQL key slot are the code's.
@Suite struct PostgresKeySlotLayoutTests {
    @Test func theKeySlotIs103BytesAndItsAuthenticatedFieldsAre43() throws {
        let parameters = Scrypt.Parameters(logN: 15, r: 8, p: 1)
        let fields = PostgresKeySlot.fields(kind: 1, parameters: parameters, salt: Array(repeating: 7, count: 32))
        #expect(fields.count == 43)
        let sealed = try AES256GCM.SealedBox(combined: Array(repeating: 1, count: 12 + 32 + 16))
        let slot = PostgresKeySlot(kind: 1, parameters: parameters, salt: Array(repeating: 7, count: 32), wrapped: sealed)
        #expect(slot.encoded().count == 103)
        #expect(try PostgresKeySlot.decode(slot.encoded()).encoded() == slot.encoded())
    }
}
