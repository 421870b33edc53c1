import CredentialVault

/// Revoking tokens a sign-out removed (RFC 7009): after the local wipe, never instead of it. A
/// failed revocation is a warning on standard error; it never undoes or fails the sign-out, and
/// the tokens it could not revoke are kept sealed in the vault (at most 16, none older than 30
/// days, never listed) until a later sign-out reaches the same server with the same client id.
enum TokenRevocation {
    /// Revokes `removed` with the stored client, if one is stored; says why not when it cannot be
    /// used. Tokens whose revocation fails are kept sealed in the vault (`session`'s pending
    /// revocations) and tried again by the next sign-out that reaches the same server; those
    /// kept from earlier sign-outs are tried here too.
    static func revoke(_ removed: Credentials?, stored: Result<StoredClientConfiguration?, VaultError>, options: VaultOptions,
                       server: ServerOptions, context: CommandContext, session: SessionManager) async {
        switch stored {
        case .success(nil):
            return
        case let .success(stored?):
            do {
                try await OAuthSupport.using(try await context.oauthClient(for: stored, options, server)) { client in
                    if let removed { await revoke(removed, with: client, stored: stored, session: session) }
                    await retryPending(with: client, stored: stored, session: session)
                }
            } catch {
                if let removed {
                    ErrorReport.note("warning: the tokens were not revoked at the server: \(TerminalText.escaped("\(error)"))")
                    await keep(removed, revoked: [], stored: stored, session: session)
                }
            }
        case let .failure(error):
            if removed != nil {
                ErrorReport.note("warning: the tokens were not revoked at the server: \(TerminalText.escaped(error.message))")
            }
        }
    }

    /// Revokes `removed` with `client`; keeps what failed.
    private static func revoke(_ removed: Credentials, with client: any CommandOAuthClient, stored: StoredClientConfiguration,
                               session: SessionManager) async {
        let report = await client.revokeAll(removed)
        ErrorReport.note(report.succeeded ? "Server: \(report.summary)." : "warning: \(report.summary)")
        if !report.succeeded { await keep(removed, revoked: report.revoked, stored: stored, session: session) }
    }

    /// Keeps the tokens of `credentials` not in `revoked`, for the next sign-out to try again.
    private static func keep(_ credentials: Credentials, revoked: [String], stored: StoredClientConfiguration, session: SessionManager) async {
        let tokens = [(credentials.refreshToken, "refresh_token"), (Optional(credentials.accessToken), "access_token")]
            .compactMap { token, hint in token.map { (token: $0, hint: hint) } }.filter { !revoked.contains($0.hint) }
        guard !tokens.isEmpty else { return }
        do {
            try await session.keepForRevocation(tokens, server: stored.revocationServer, clientID: stored.clientID)
            ErrorReport.note("Kept \(tokens.count) token\(tokens.count == 1 ? "" : "s") sealed in the vault; the next sign-out tries to revoke them again.")
        } catch {
            ErrorReport.note("warning: the tokens whose revocation failed could not be kept for another try")
        }
    }

    /// Tries again the tokens kept from earlier sign-outs that belong to `stored`'s server and client id.
    private static func retryPending(with client: any CommandOAuthClient, stored: StoredClientConfiguration, session: SessionManager) async {
        guard let pending = try? await session.pendingRevocations()
            .filter({ $0.server == stored.revocationServer && $0.clientID == stored.clientID }), !pending.isEmpty else { return }
        var done: [String] = []
        for token in pending where await client.revoke(token.token, hint: token.hint) { done.append(token.id) }
        try? await session.forgetPendingRevocations(done)
        ErrorReport.note("Server: revoked \(done.count) of \(pending.count) token\(pending.count == 1 ? "" : "s") kept from an earlier sign-out.")
    }
}
