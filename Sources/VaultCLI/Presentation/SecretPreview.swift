import CredentialVault

/// A masked preview of a secret: its first few characters and an ellipsis, so a person can
/// tell tokens apart without the secret being shown.
enum SecretPreview {
    /// Secrets shorter than this get no preview at all.
    static let minimumBytes = 12
    /// At most this many leading characters are shown.
    static let maximumShownBytes = 4
    /// At most one byte in this many is shown (1/8 of the secret).
    static let shownFractionDenominator = 8

    /// The first few bytes of `secret` followed by "…", e.g. "eyJh…".
    ///
    /// Shows at most 4 bytes and at most 1/8 of the secret; nothing when the secret is
    /// shorter than 12 bytes or any shown byte is not printable ASCII (no control bytes
    /// reach a terminal).
    /// - Parameter secret: the secret.
    /// - Returns: the preview, or nil when nothing may be shown.
    static func prefix(of secret: SecureBytes) -> String? {
        guard secret.count >= minimumBytes else { return nil }
        let shown = min(maximumShownBytes, secret.count / shownFractionDenominator)
        guard shown > 0 else { return nil }
        return secret.withUnsafeBytes { bytes -> String? in
            let head = bytes.prefix(shown)
            guard head.allSatisfy({ (0x21...0x7E).contains($0) }) else { return nil }
            return String(decoding: head, as: UTF8.self) + "…"
        }
    }
}
