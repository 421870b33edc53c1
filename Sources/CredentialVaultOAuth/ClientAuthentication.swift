import VaultCrypto

/// How the client authenticates at the token and revocation endpoints (RFC 6749 §2.3).
public enum ClientAuthentication: Sendable {
    /// A public client: only `client_id` is sent (device apps, command-line tools).
    case none
    /// HTTP Basic with the form-encoded client id and secret (`client_secret_basic`).
    case clientSecretBasic(SecureBytes)
    /// `client_id` and `client_secret` in the form body (`client_secret_post`).
    case clientSecretPost(SecureBytes)

    /// The name used in server metadata: "none", "client_secret_basic", "client_secret_post".
    public var methodName: String {
        switch self {
        case .none: "none"
        case .clientSecretBasic: "client_secret_basic"
        case .clientSecretPost: "client_secret_post"
        }
    }
}
