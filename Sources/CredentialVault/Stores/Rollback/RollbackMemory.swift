import FoundationEssentials

/// Where a `SecretStore` remembers, across runs, the highest generation (and the KDF
/// parameters) it has seen of each vault: outside the vault folder, so that putting an older
/// vault folder back does not put back the memory too. See docs/SECURITY.md, "Rollback".
public enum RollbackMemory: Sendable, Equatable {
    /// `$XDG_STATE_HOME/vault/generations`, else `~/.local/state/vault/generations`.
    case standard
    /// This directory (created 0700 when missing).
    case directory(String)
    /// Remember nothing across runs (only within one `SecretStore`).
    case disabled

    /// The directory the records live in, or nil when disabled (or no home directory is known).
    /// - Parameter environment: the process environment.
    public func directory(environment: [String: String] = ProcessEnvironment.values("XDG_STATE_HOME", "HOME")) -> String? {
        switch self {
        case .disabled: return nil
        case let .directory(path): return path
        case .standard:
            if let state = environment["XDG_STATE_HOME"], state.hasPrefix("/") {
                return PathText.joining(state, "vault/generations")
            }
            guard let home = PathText.homeDirectory(environment: environment), home.hasPrefix("/") else { return nil }
            return PathText.joining(home, ".local/state/vault/generations")
        }
    }
}
