import CredentialVault
import FoundationEssentials

extension StoredClientConfiguration {
    /// The copy an earlier version kept in `options`' plain profile, if any (never used as it is).
    static func profileCopy(_ options: VaultOptions) throws -> StoredClientConfiguration? {
        try profileCopy(directory: options.directory, lockTimeout: options.lockTimeout)
    }

    /// Removes the profile's copy (once the configuration is sealed, or forgotten).
    static func removeProfileCopy(_ options: VaultOptions) throws {
        try removeProfileCopy(directory: options.directory, lockTimeout: options.lockTimeout)
    }
}

/// The OAuth client's use by the commands.
enum OAuthSupport {
    /// Runs `body` with `client`, then shuts the client down whatever happened.
    static func using<T>(_ client: any CommandOAuthClient, _ body: (any CommandOAuthClient) async throws -> T) async throws -> T {
        do {
            let result = try await body(client)
            try? await client.shutdown()
            return result
        } catch {
            try? await client.shutdown()
            throw error
        }
    }

    /// Why the tokens a sign-out removes cannot be revoked now: the stored client cannot be read or
    /// made (no vault-oauth, a missing secret, a changed CA bundle, a forged profile copy).
    struct NoRevocation {
        /// What went wrong (shown in the warning).
        let reason: String
        /// The stored client, when it could be read: the tokens are kept for its next sign-out.
        let stored: StoredClientConfiguration?
    }

    /// Ends a session through the library with the stored client (`withClient`: sign-out, guest,
    /// recovery, each revoking at the server), or, with no client stored or none that can be
    /// made, `without` (the local wipe only; told why the tokens cannot be revoked, nil when no
    /// client is stored). The wipe never depends on the server.
    static func endingSession<T>(stored: Result<StoredClientConfiguration?, VaultError>, options: VaultOptions, server: ServerOptions,
                                 context: CommandContext, _ withClient: (any CommandOAuthClient) async throws -> T,
                                 without: (NoRevocation?) async throws -> T) async throws -> T {
        let client: any CommandOAuthClient
        switch stored {
        case .success(nil):
            return try await without(nil)
        case let .failure(error):
            return try await without(NoRevocation(reason: error.message, stored: nil))
        case let .success(stored?):
            do {
                client = try await context.oauthClient(for: stored, options, server)
            } catch {
                return try await without(NoRevocation(reason: "\(error)", stored: stored))
            }
        }
        return try await using(client, withClient)
    }

    /// Says what happened to tokens a sign-out removed but could not revoke, and keeps them
    /// sealed for the next sign-out that reaches the stored client's server.
    static func notRevoked(_ removed: Credentials?, _ why: NoRevocation?, session: SessionManager) async {
        guard let removed, let why else { return }
        ErrorReport.note("warning: the tokens were not revoked at the server: \(TerminalText.escaped(why.reason))")
        guard let stored = why.stored else { return }
        do {
            let kept = try await session.keepUnrevoked(removed, revoked: [], server: stored.revocationServer, clientID: stored.clientID)
            if kept > 0 { ErrorReport.note(keptNote(kept)) }
        } catch {
            ErrorReport.note(notKeptWarning)
        }
    }

    /// A warning of the library's (a refreshed ID token dropped unchecked), on standard error.
    static let warn: @Sendable (String) -> Void = { text in ErrorReport.note("warning: " + TerminalText.escaped(text)) }

    private static let notKeptWarning = "warning: the tokens whose revocation failed could not be kept for another try"

    /// Tells the user what the server did with the tokens (standard error; a failure is a warning).
    static func show(_ revocation: CommandRevocation) {
        if revocation.hadTokens {
            ErrorReport.note(revocation.succeeded ? "Server: \(revocation.summary)." : "warning: \(revocation.summary)")
        }
        if revocation.keptForLater > 0 { ErrorReport.note(keptNote(revocation.keptForLater)) }
        if revocation.couldNotKeep { ErrorReport.note(notKeptWarning) }
        if let (revoked, tried) = revocation.earlier {
            ErrorReport.note("Server: revoked \(revoked) of \(tried) token\(tried == 1 ? "" : "s") kept from an earlier sign-out.")
        }
    }

    private static func keptNote(_ count: Int) -> String {
        "Kept \(count) token\(count == 1 ? "" : "s") sealed in the vault; the next sign-out tries to revoke them again."
    }
}
