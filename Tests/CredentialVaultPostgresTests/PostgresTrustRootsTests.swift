@testable import CredentialVaultPostgres
import CredentialVault
import Foundation
import Testing

/// `PGSSLROOTCERT`: the PEM file of trust roots that verifies a remote server's certificate
/// (libpq's variable), read from the environment like `PGPASSWORD`; a file that cannot be used is
/// a clear `.invalidInput` before any connection, never "server unavailable". The cut-link fault
/// test (PostgresCutLinkFaultTests) connects through it to a server whose certificate a throwaway CA signed.
@Suite("PostgreSQL TLS trust roots (PGSSLROOTCERT)")
struct PostgresTrustRootsTests {
    @Test("PGSSLROOTCERT is read from the environment; unset or empty means the system's trust store")
    func readFromTheEnvironment() throws {
        let url = "postgres://app@db.example:5432/vault"
        #expect(try PostgresStoreConfiguration(url: url, environment: ["PGSSLROOTCERT": "/etc/db/ca.pem"]).trustRootsPath == "/etc/db/ca.pem")
        #expect(try PostgresStoreConfiguration(url: url, environment: ["PGSSLROOTCERT": ""]).trustRootsPath == nil)
        #expect(try PostgresStoreConfiguration(url: url, environment: [:]).trustRootsPath == nil)
    }

    @Test("a missing file, a directory, a file without a certificate: .invalidInput naming the file, before any connection",
          arguments: ["missing", "directory", "garbage", "empty"])
    func unusableFilesAreRefused(kind: String) async throws {
        let folder = NSTemporaryDirectory() + "vault-trust-roots-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/ca.pem"
        switch kind {
        case "directory": try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        case "garbage": _ = FileManager.default.createFile(atPath: path, contents: Data("-----BEGIN CERTIFICATE-----\nnot base64\n".utf8))
        case "empty": _ = FileManager.default.createFile(atPath: path, contents: Data())
        default: break
        }
        // An address nothing listens on (TEST-NET-1): were a connection tried, the open would
        // take the connect timeout and report the server unavailable.
        var configuration = try PostgresStoreConfiguration(url: "postgres://app@192.0.2.1:5432/vault", environment: ["PGSSLROOTCERT": path])
        configuration.connectTimeout = .seconds(30)
        #expect(configuration.endpoints.allSatisfy { $0.transport == .tlsRequired })
        let started = ContinuousClock.now
        do {
            _ = try await PostgresSecretStore.open(configuration: configuration, key: .keyMaterial(SecureBytes(copying: [UInt8](repeating: 7, count: 32))),
                                                   options: PostgresSecretStore.Options(operationTimeout: .seconds(30)))
            Issue.record("opened with an unusable trust roots file")
        } catch let error as VaultError {
            #expect(error.code == .invalidInput)
            #expect(error.message.contains(path), "\(error.message)")
            #expect(error.message.contains("trust roots"))
        }
        #expect(ContinuousClock.now - started < .seconds(10), "the file was not checked before connecting")
    }

    @Test("a PEM file of certificates becomes the only trust roots; `system` keeps the system's store")
    func certificatesBecomeTheTrustRoots() throws {
        let bundle = "/etc/ssl/certs/ca-certificates.crt"
        try #require(FileManager.default.isReadableFile(atPath: bundle), "no CA bundle at \(bundle)")
        var configuration = try PostgresStoreConfiguration(url: "postgres://app@db.example/vault", environment: ["PGSSLROOTCERT": bundle])
        guard case .certificates(let roots)? = try configuration.tlsClientConfiguration().trustRoots else {
            Issue.record("the trust roots are not the file's certificates")
            return
        }
        #expect(roots.count > 1)
        configuration.trustRootsPath = "system"
        #expect(try configuration.tlsClientConfiguration().trustRoots == .default)
        configuration.trustRootsPath = nil
        #expect(try configuration.tlsClientConfiguration().trustRoots == .default)
    }
}
