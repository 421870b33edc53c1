#if canImport(Glibc)
import Glibc
#else
#error("vault runs on Linux (Glibc)")
#endif
import CredentialVault
import FoundationEssentials

extension VaultOptions {
    /// True when the vault directory holds neither a vault nor a profile: nothing to read,
    /// and a read command must not create them (`status` and `token` say so instead).
    var hasNoSession: Bool {
        let profile = PathText.joining(directory, "profile.json")
        return !SecretStore.exists(in: directory) && access(profile, F_OK) != 0
    }
}

extension SessionState {
    /// The `vault status --json` object (docs/CLI.md): state, anonymousId, userId, expiresAt, reason, …
    func jsonValue(anonymousID: String?) -> JSONValue {
        var object: [String: JSONValue] = [
            "state": .string(name),
            "anonymousId": anonymousID.map(JSONValue.string) ?? .null,
            "userId": user.map { .string($0.id) } ?? .null,
            "displayName": user?.displayName.map(JSONValue.string) ?? .null,
            "email": user?.email.map(JSONValue.string) ?? .null,
            "expiresAt": credentials?.expiresAt.map { .string(RFC3339.string(from: $0)) } ?? .null,
            "hasRefreshToken": .null,
            "reason": .null,
            "message": .null,
        ]
        switch self {
        case let .signedIn(_, credentials), let .needsOnboarding(_, credentials):
            object["hasRefreshToken"] = .bool(credentials.refreshToken != nil)
        case let .expired(_, hasRefreshToken, expiresAt):
            object["hasRefreshToken"] = .bool(hasRefreshToken)
            object["expiresAt"] = expiresAt.map { .string(RFC3339.string(from: $0)) } ?? .null
        case let .unavailable(why):
            object["reason"] = .string(why.reason.rawValue)
            object["message"] = .string(why.error?.description ?? why.description)
        case .guest:
            break
        }
        return .object(object)
    }

    /// The exit status of `vault status`: 0 whenever the state is known; for `unavailable`
    /// the status of the underlying error (77 for a locked vault).
    var exitStatus: Int32 {
        guard case let .unavailable(why) = self else { return VaultExitStatus.success }
        if let error = why.error { return error.exitStatus }
        return VaultExitStatus.permission
    }
}
