/// Facts about the linked crypto library.
public enum CryptoLibrary {
    /// The OpenSSL version string vault is running against, e.g. "OpenSSL 3.0.19 27 Jan 2026".
    public static var versionText: String { OpenSSLBackend.versionText }
}
