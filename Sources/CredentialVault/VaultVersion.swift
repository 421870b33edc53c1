/// The version of the vault library and CLI: the one place it is written down.
///
/// `vault --version` prints it, `scripts/package` names the .deb and .tar.gz after it, and
/// CHANGELOG.md's top section is the release it will become. It follows Semantic
/// Versioning (README.md, "Versions"); a `-dev` suffix marks a build from an untagged tree
/// ahead of that release.
public enum VaultVersion {
    /// Semantic version of this build.
    public static let current = "0.2.0-dev"
}
