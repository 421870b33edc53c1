import CredentialVault
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
    public var methodName: String { method.rawValue }

    /// The method without its secret, as a stored client configuration names it.
    package var method: ClientAuthMethod {
        switch self {
        case .none: .none
        case .clientSecretBasic: .clientSecretBasic
        case .clientSecretPost: .clientSecretPost
        }
    }

    /// `method` with `secret`; nil when the method sends a secret and there is none.
    package init?(method: ClientAuthMethod, secret: SecureBytes?) {
        switch (method, secret) {
        case (.none, _): self = .none
        case let (.clientSecretBasic, secret?): self = .clientSecretBasic(secret)
        case let (.clientSecretPost, secret?): self = .clientSecretPost(secret)
        case (.clientSecretBasic, nil), (.clientSecretPost, nil): return nil
        }
    }
}
