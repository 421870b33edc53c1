/// What happened to the tokens at the server when the session signed out (RFC 7009).
/// The local wipe has happened whatever this says.
public struct RevocationReport: Sendable, CustomStringConvertible {
    /// The outcome at the server.
    public enum Outcome: Sendable {
        /// Every token was revoked.
        case revoked
        /// The server has no revocation endpoint (none configured or discovered).
        case noRevocationEndpoint
        /// There were no tokens to revoke (nobody was signed in).
        case nothingToRevoke
        /// At least one revocation failed; the tokens may still be alive at the server.
        case failed([OAuthError])
    }

    /// The outcome at the server.
    public let outcome: Outcome
    /// The token types revoked: "refresh_token", "access_token".
    public let revoked: [String]
    /// How many tokens whose revocation failed were kept sealed in the vault for a later try
    /// (0 when none failed, or when they could not be kept).
    public internal(set) var keptForLater = 0
    /// True when tokens whose revocation failed could not be kept for a later try (the vault
    /// busy, the disk full): they may stay alive at the server until they expire.
    public internal(set) var couldNotKeep = false
    /// The tokens kept from earlier sign-outs that this call tried again, when there were any.
    public internal(set) var earlier: EarlierRevocations?

    /// Tokens kept from earlier sign-outs, tried again: how many were revoked, of how many.
    public struct EarlierRevocations: Sendable, Equatable {
        /// How many were revoked (and forgotten).
        public let revoked: Int
        /// How many were tried.
        public let tried: Int
    }

    init(outcome: Outcome, revoked: [String]) {
        self.outcome = outcome
        self.revoked = revoked
    }

    /// True unless a revocation failed.
    public var succeeded: Bool {
        if case .failed = outcome { return false }
        return true
    }

    /// "revoked refresh_token, access_token" or the failures.
    public var description: String {
        switch outcome {
        case .revoked: "revoked " + revoked.joined(separator: ", ")
        case .noRevocationEndpoint: "not revoked: the server has no revocation endpoint"
        case .nothingToRevoke: "nothing to revoke"
        case .failed(let errors): "revocation failed: " + errors.map(\.description).joined(separator: "; ")
        }
    }
}
