import FoundationEssentials

/// Where the vault lives when no `--vault DIR` is given.
public enum VaultLocation {
    /// `$VAULT_DIR`, else `$XDG_DATA_HOME/vault`, else `$HOME/.local/share/vault`.
    ///
    /// Empty variables count as unset, and a relative `XDG_DATA_HOME` is ignored, as the
    /// XDG Base Directory specification asks.
    /// - Parameter environment: the process environment.
    /// - Returns: the directory path.
    public static func defaultDirectory(environment: [String: String] = ProcessEnvironment.values("VAULT_DIR", "XDG_DATA_HOME", "HOME")) -> String {
        if let directory = environment["VAULT_DIR"], !directory.isEmpty { return directory }
        if let data = environment["XDG_DATA_HOME"], data.hasPrefix("/") {
            return PathText.joining(data, "vault")
        }
        let home = PathText.homeDirectory(environment: environment) ?? "/"
        return PathText.joining(home, ".local/share/vault")
    }
}
