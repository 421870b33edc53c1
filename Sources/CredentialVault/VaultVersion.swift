/// The version of the vault library and CLI.
public enum VaultVersion {
    /// Semantic version of this release.
    public static let current = "0.1.0"
}
