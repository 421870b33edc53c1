/// Facts about the linked crypto library.
public enum CryptoLibrary {
    /// The OpenSSL version string vault is running against, e.g. "OpenSSL 3.0.19 27 Jan 2026".
    public static var versionText: String { OpenSSLBackend.versionText }

    /// Initialises libcrypto for a short-lived command line tool, before any other crypto call:
    /// the system's OpenSSL configuration is loaded as always (a FIPS or provider policy applies),
    /// but libcrypto's table of error texts is not, which saves about 1 M instructions per
    /// process (docs/BENCHMARKS.md). OpenSSL failures then report their error codes, not their
    /// texts. Process-wide, so only an executable calls it (the `vault` commands), never the library.
    /// - Returns: false when libcrypto could not be initialised (the first crypto call reports it).
    @discardableResult
    package static func initializeForCommandLine() -> Bool {
        OpenSSLBackend.initializeForCommandLine()
    }
}
