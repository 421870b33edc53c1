import CredentialVault
import FoundationEssentials

/// Where an entry stands against its expiry date, for people: "expires in 12 min",
/// "expired 3 h ago", "no expiry".
enum ExpiryStatus: Sendable, Hashable, CustomStringConvertible {
    /// The entry has no expiry date.
    case noExpiry
    /// The entry is valid for this many more seconds.
    case expiresIn(TimeInterval)
    /// The entry expired this many seconds ago (0 when it expires exactly now).
    case expired(ago: TimeInterval)

    /// The status of `expiresAt` at `now`; an entry expiring exactly now is expired,
    /// as in `EntryMetadata.isExpired(at:)`.
    init(expiresAt: Date?, now: Date) {
        guard let expiresAt else {
            self = .noExpiry
            return
        }
        let remaining = expiresAt.timeIntervalSince(now)
        self = remaining > 0 ? .expiresIn(remaining) : .expired(ago: -remaining)
    }

    /// True for `.expired`.
    var isExpired: Bool {
        if case .expired = self { return true }
        return false
    }

    /// "no expiry", "expires in 12 min", "expired 3 h ago", "expired just now".
    var description: String {
        switch self {
        case .noExpiry: "no expiry"
        case .expiresIn(let seconds): "expires in \(HumanDuration.describe(seconds: seconds))"
        case .expired(let seconds) where seconds < 1: "expired just now"
        case .expired(let seconds): "expired \(HumanDuration.describe(seconds: seconds)) ago"
        }
    }
}

extension EntryMetadata {
    /// Where this entry stands against its expiry date at `now`.
    func expiryStatus(at now: Date) -> ExpiryStatus {
        ExpiryStatus(expiresAt: expiresAt, now: now)
    }
}
