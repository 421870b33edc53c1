import ArgumentParser
import CredentialVault

extension ClientAuthMethod: ExpressibleByArgument {
    /// `--auth`: `none`, `basic` or `post`, or the RFC names (`client_secret_basic`, `client_secret_post`).
    package init?(argument: String) {
        switch argument.lowercased() {
        case "none": self = .none
        case "basic", "client_secret_basic": self = .clientSecretBasic
        case "post", "client_secret_post": self = .clientSecretPost
        default: return nil
        }
    }

    /// The spellings help and shell completion list.
    package static var allValueStrings: [String] { ["none", "basic", "post"] }

    /// Shell completion offers the same spellings.
    package static var defaultCompletionKind: CompletionKind { .list(allValueStrings) }
}

extension ClientGrant: ExpressibleByArgument {
    /// `--grant`: `refresh_token` or `client_credentials`.
    package init?(argument: String) {
        self.init(rawValue: argument)
    }
}

extension MergePolicy: ExpressibleByArgument {
    /// `--merge-policy`: keepAccount, keepGuest, newestWins or fail (any case, dashes ignored).
    public init?(argument: String) {
        switch argument.lowercased().replacing("-", with: "") {
        case "keepaccount": self = .keepAccount
        case "keepguest": self = .keepGuest
        case "newestwins": self = .newestWins
        case "fail": self = .fail
        default: return nil
        }
    }

    /// The names help and shell completion list.
    public static var allValueStrings: [String] { ["keepAccount", "keepGuest", "newestWins", "fail"] }

    /// Shell completion offers the same names.
    public static var defaultCompletionKind: CompletionKind { .list(allValueStrings) }
}
