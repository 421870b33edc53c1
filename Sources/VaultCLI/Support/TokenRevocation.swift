import CredentialVault

/// Revoking tokens a sign-out removed (RFC 7009): after the local wipe, never instead of it. A
/// failed revocation is a warning on standard error; it never undoes or fails the sign-out.
enum TokenRevocation {
    /// Revokes `removed` with the client `makeClient` builds, and says what happened.
    static func revoke(_ removed: Credentials, with makeClient: () async throws -> any CommandOAuthClient) async {
        do {
            let report = try await OAuthSupport.using(try await makeClient()) { await $0.revokeAll(removed) }
            ErrorReport.note(report.succeeded ? "Server: \(report.summary)." : "warning: \(report.summary)")
        } catch {
            ErrorReport.note("warning: the tokens were not revoked at the server: \(TerminalText.escaped("\(error)"))")
        }
    }
}
