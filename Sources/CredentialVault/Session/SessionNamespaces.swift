/// Owner namespaces and reserved entry names the session layer uses inside the vault.
public enum SessionNamespaces {
    /// The owner of a guest's items: "guest:<anonymous id>".
    public static func guest(_ anonymousID: String) -> String { "guest:\(anonymousID)" }
    /// The owner of a user's credentials and items: "user:<user id>".
    public static func user(_ userID: String) -> String { "user:\(userID)" }

    /// Entry names reserved for the session, inside a user's namespace.
    enum Reserved {
        static let prefix = "session."
        static let accessToken = "session.access-token"
        static let refreshToken = "session.refresh-token"
        static let idToken = "session.id-token"
        static let tokenInfo = "session.token-info"
        static let migration = "session.migration"
        /// The journal id of the refresh whose tokens are saved beside it (`RefreshJournal`).
        static let refreshMarker = "session.refresh-journal"
        /// Per-audience access tokens (RFC 8707): "session.audience.<hash>.access-token" and ".token-info".
        static let audiencePrefix = "session.audience."
    }
}
