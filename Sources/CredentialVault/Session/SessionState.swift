import FoundationEssentials

/// Who is using the app right now: the one answer `SessionManager.restore()` gives at start-up.
///
/// Each case carries exactly what is known in that state, so impossible combinations
/// (signed in without credentials, a guest with a user id) cannot be expressed.
/// `unavailable` is never folded into `guest`: a vault that cannot be read is not a
/// signed-out user.
public enum SessionState: Sendable, CustomStringConvertible, Equatable {
    /// Nobody is signed in; the install's stable anonymous id.
    case guest(anonymousID: String)
    /// Signed in with credentials valid for the requested time to live.
    case signedIn(User, Credentials)
    /// Signed in with valid credentials, but the app's onboarding is not finished.
    case needsOnboarding(User, Credentials)
    /// The user is known but the access token is expired or missing (`expiresAt` nil); refresh or sign in again.
    case expired(User, hasRefreshToken: Bool, expiresAt: Date?)
    /// The stores could not be read; the reason says why. Nothing was changed.
    case unavailable(SessionUnavailable)

    /// The stable state name used by the CLI's `--json`: guest, signedIn, needsOnboarding, expired, unavailable.
    public var name: String {
        switch self {
        case .guest: "guest"
        case .signedIn: "signedIn"
        case .needsOnboarding: "needsOnboarding"
        case .expired: "expired"
        case .unavailable: "unavailable"
        }
    }

    /// The user, in every state that has one.
    public var user: User? {
        switch self {
        case let .signedIn(user, _), let .needsOnboarding(user, _), let .expired(user, _, _): user
        case .guest, .unavailable: nil
        }
    }

    /// The credentials, in the states that have valid ones.
    public var credentials: Credentials? {
        switch self {
        case let .signedIn(_, credentials), let .needsOnboarding(_, credentials): credentials
        case .guest, .expired, .unavailable: nil
        }
    }

    /// "signedIn(user u1, Credentials(…))" — never a token.
    public var description: String {
        switch self {
        case let .guest(anonymousID): "guest(\(anonymousID))"
        case let .signedIn(user, credentials): "signedIn(user \(TerminalText.escaped(user.id)), \(credentials))"
        case let .needsOnboarding(user, credentials): "needsOnboarding(user \(TerminalText.escaped(user.id)), \(credentials))"
        case let .expired(user, hasRefreshToken, _): "expired(user \(TerminalText.escaped(user.id)), refresh token: \(hasRefreshToken ? "yes" : "no"))"
        case let .unavailable(reason): "unavailable(\(reason))"
        }
    }
}

/// Why the session could not be determined.
public struct SessionUnavailable: Error, Sendable, CustomStringConvertible {
    /// The broad cause.
    public enum Reason: String, Sendable, Codable {
        /// No key was given, so the vault stays locked.
        case locked
        /// The key does not open the vault.
        case wrongKey
        /// A store is corrupt, tampered, rolled back or of an unsupported version.
        case corrupt
        /// A store could not be read (permissions, I/O).
        case unreadable
        /// Another process held a lock past the timeout.
        case busy
        /// The vault holds a signed-in user's session but the profile that names the user is
        /// missing: an inconsistent state, never read as "signed out" (that would drop the tokens
        /// without revoking them). `SessionManager.recoverFromMissingProfile(revoke:)` ends it.
        case profileMissing
    }

    /// The broad cause.
    public let reason: Reason
    /// The underlying error, when there is one.
    public let error: VaultError?

    /// Classifies a store error.
    init(_ error: VaultError) {
        self.error = error
        switch error.code {
        case .wrongKey, .invalidKey: reason = .wrongKey
        case .corrupt, .tampered, .unsupportedVersion, .kdfOutsidePolicy, .suspiciousKDFParameters, .rollbackDetected: reason = .corrupt
        case .busy: reason = .busy
        default: reason = .unreadable
        }
    }

    init(reason: Reason, error: VaultError?) {
        self.reason = reason
        self.error = error
    }

    /// "corrupt: the vault failed its integrity check in the entry index (…)".
    public var description: String {
        guard let error else { return reason == .locked ? "locked: no key was given to open the vault" : reason.rawValue }
        return "\(reason.rawValue): \(error)"
    }
}

extension SessionState {
    /// Equal when the case, the user and the credentials are (tokens compared in constant time);
    /// two `unavailable` states are equal when their reasons are (the underlying errors may differ
    /// in wording).
    public static func == (lhs: SessionState, rhs: SessionState) -> Bool {
        switch (lhs, rhs) {
        case let (.guest(left), .guest(right)): left == right
        case let (.signedIn(leftUser, left), .signedIn(rightUser, right)),
             let (.needsOnboarding(leftUser, left), .needsOnboarding(rightUser, right)):
            leftUser == rightUser && left.sameTokens(as: right)
        case let (.expired(leftUser, leftRefresh, leftExpiry), .expired(rightUser, rightRefresh, rightExpiry)):
            leftUser == rightUser && leftRefresh == rightRefresh && leftExpiry == rightExpiry
        case let (.unavailable(left), .unavailable(right)): left.reason == right.reason
        default: false
        }
    }
}

extension Credentials {
    /// Same tokens, type, scopes and times.
    func sameTokens(as other: Credentials) -> Bool {
        accessToken == other.accessToken && refreshToken == other.refreshToken && idToken == other.idToken
            && tokenType == other.tokenType && scopes == other.scopes && expiresAt == other.expiresAt && issuedAt == other.issuedAt
    }
}
