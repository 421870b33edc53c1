import CredentialVault
import FoundationEssentials
import NIOSSL

extension PostgresStoreConfiguration {
    /// The TLS settings of a `.tlsRequired` connection: the server's certificate is verified,
    /// with its name or IP address, against the system's trust store, or against the PEM file of
    /// trust roots at `trustRootsPath` (libpq's `PGSSLROOTCERT`; the value `system` means the
    /// system's store, as for libpq). The file is read here, so a bad one is reported before any
    /// connection is tried, not as an unreachable server.
    /// - Throws: `.invalidInput` when the file cannot be read or holds no PEM certificate.
    func tlsClientConfiguration() throws -> TLSConfiguration {
        var tls = TLSConfiguration.makeClientConfiguration()
        guard let path = trustRootsPath, path != "system" else { return tls }
        let fix = "point PGSSLROOTCERT at a readable PEM file of the CA certificates that sign the server's certificate"
        let certificates: [NIOSSLCertificate]
        do {
            certificates = try NIOSSLCertificate.fromPEMFile(path)
        } catch {
            throw VaultError(.invalidInput, "the trust roots file \(TerminalText.escaped(path)) cannot be read as PEM certificates", fix: fix)
        }
        guard !certificates.isEmpty else {
            throw VaultError(.invalidInput, "the trust roots file \(TerminalText.escaped(path)) holds no certificate", fix: fix)
        }
        tls.trustRoots = .certificates(certificates)
        return tls
    }
}
