@testable import CredentialVault
import Testing

/// "Loopback" decided from the host as an IP literal (`inet_pton`), never from its text's prefix
/// and never by a name lookup: the rule behind plain http (OAuth) and TLS off (PostgreSQL).
@Suite struct LoopbackHostTests {
    @Test(arguments: [
        ("127.0.0.1", "127.0.0.1"), ("127.255.255.254", "127.255.255.254"), ("127.1.2.3", "127.1.2.3"),
        ("localhost", "127.0.0.1"), ("LocalHost", "127.0.0.1"), ("::1", "::1"), ("[::1]", "::1"),
    ])
    func loopbackLiteralsAndLocalhost(host: String, address: String) {
        #expect(LoopbackHost.address(host) == address)
    }

    @Test(arguments: [
        "127.0.0.08",          // glibc's resolver reads 08 as bad octal and looks the text up as a name
        "127.1",               // a shortened form inet_aton takes and inet_pton does not
        "0177.0.0.1",          // octal
        "127.db.example",      // a name that starts with 127.
        "127.0.0.1.nip.io",
        "128.0.0.1", "10.0.0.1", "0.0.0.0",
        "::ffff:127.0.0.1",    // IPv4-mapped: refused, not trusted
        "::2", "[::1", "localhost.", "localhost.example", "", " 127.0.0.1",
    ])
    func everythingElseIsNotLoopback(host: String) {
        #expect(LoopbackHost.address(host) == nil)
    }
}
