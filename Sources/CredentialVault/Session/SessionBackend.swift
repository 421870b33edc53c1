import FoundationEssentials
import VaultCrypto

/// What a session needs from its storage: the one seam between `SessionManager` and where the
/// session's records live, chosen once by the initialiser (docs/SESSIONS.md, "Backends").
///
/// Three implementations:
/// - `VaultFileBackend`: the vault file, which this process opens itself: everything a session has.
/// - `AgentBackend`: the vault file held unlocked by the user's `vault agent`: the session's own
///   records (read, refresh, end); what needs the whole vault reports it locked.
/// - `FleetBackend`: a session shared by a fleet (`FleetSessionStore`: PostgreSQL): its tokens only.
///
/// The first two keep a session on a device (`DeviceSessionBackend`: a profile, `session.lock`,
/// journals, guest items) and share the flows `SessionManager` writes once for them; a fleet runs
/// its own. What a backend cannot do is its type's answer to `device(for:)`, in one place.
protocol SessionBackend: Sendable {
    /// The device storage `feature` needs.
    /// - Throws: `.unsupportedOperation` from a backend that keeps no session on a device (a fleet).
    func device(for feature: DeviceFeature) throws -> any DeviceSessionBackend

    /// The state `restore()` finds (finishing what a crash interrupted). Never throws: failures are `.unavailable`.
    func restoredState(of session: isolated SessionManager, minTTL: Duration, refreshLockWait: Duration?) async -> SessionState
    /// The state `peek()` finds, without changing anything. Never throws.
    func peekedState(of session: isolated SessionManager, minTTL: Duration) async -> SessionState
    /// The signed-in session's credentials as stored. - Throws: `.notSignedIn`; `.sessionExpired`; store errors.
    func storedCredentials(of session: isolated SessionManager) async throws -> Credentials
    /// As `SessionManager.validCredentials(minTTL:refreshLockWait:refresher:)`.
    func validCredentials(of session: isolated SessionManager, minTTL: Duration, refreshLockWait: Duration?,
                          refresher: @escaping TokenRefresher) async throws -> Credentials
    /// A refresh whatever the expiry: `joining` a refresh running in this process (`renew`), or after it (`refreshNow`).
    func refreshNow(of session: isolated SessionManager, refreshLockWait: Duration?, joining: Bool,
                    refresher: @escaping TokenRefresher) async throws -> Credentials
    /// As `SessionManager.signIn(user:credentials:policy:)`.
    func signIn(of session: isolated SessionManager, user: User, credentials: Credentials, policy: MergePolicy) async throws -> MigrationReport
    /// As `SessionManager.signOut(localData:newAnonymousID:resetSettings:)`.
    func signOut(of session: isolated SessionManager, localData: LocalDataPolicy?, newAnonymousID: Bool,
                 resetSettings: Bool) async throws -> Credentials?
    /// As `SessionManager.clientCredentials(clientID:minTTL:fetch:)`.
    func clientCredentials(of session: isolated SessionManager, clientID: String, minTTL: Duration,
                           fetch: @escaping @Sendable () async throws -> Credentials) async throws -> Credentials
}

/// What a session on a device has and a fleet's session does not: each refusal's words in one place.
enum DeviceFeature: Sendable {
    case items, guestItems, guestMode, onboarding, settings, signInScreen, profileRecovery, deviceData
    case audienceTokens, pendingRevocations, profile

    /// The feature in the words of its refusal.
    var text: String {
        switch self {
        case .items: "items"
        case .guestItems: "guest items"
        case .guestMode: "guest mode"
        case .onboarding: "onboarding"
        case .settings: "settings"
        case .signInScreen: "sign-in screen"
        case .profileRecovery: "profile recovery"
        case .deviceData: "device data to wipe"
        case .audienceTokens: "per-audience tokens"
        case .pendingRevocations: "pending revocations"
        case .profile: "profile"
        }
    }
}
