import Foundation
import Testing
import TestScheduling

/// vault initialises libcrypto itself (without its error texts, for start-up time) and must still
/// honour the system's OpenSSL configuration: an administrator's provider or FIPS policy applies
/// to vault or makes it fail, never silently not at all.
@Suite(.blockingWork) struct OpenSSLConfigurationTests {
    @Test func aPolicyInOpenSSLConfIsHonoured() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        #expect(try sandbox.run(["add", "api"], stdin: Data("s3cret".utf8), environment: key).status == 0)
        // Every algorithm must come from a FIPS provider, and none is loaded: every fetch fails.
        let policy = sandbox.privateFile("fips-only.cnf", """
            openssl_conf = openssl_init
            [openssl_init]
            alg_section = algorithms
            [algorithms]
            default_properties = fips=yes

            """)
        let refused = try sandbox.run(["get", "api"], environment: key.merging(["OPENSSL_CONF": policy]) { _, new in new })
        #expect(refused.status == 1)
        #expect(refused.stdout.isEmpty)
        #expect(refused.stderrText.hasPrefix("vault: OpenSSL "), "\(refused.stderrText)")
        #expect(refused.stderrText.contains("\nhint: check the OpenSSL configuration"))
        #expect(!refused.stderrText.contains("s3cret"))
        // A configuration that changes nothing vault uses: the same command works.
        let neutral = sandbox.privateFile("neutral.cnf", "openssl_conf = openssl_init\n[openssl_init]\n")
        let allowed = try sandbox.run(["get", "api"], environment: key.merging(["OPENSSL_CONF": neutral]) { _, new in new })
        #expect(allowed.status == 0, "\(allowed.stderrText)")
        #expect(allowed.stdoutText == "s3cret")
    }
}
