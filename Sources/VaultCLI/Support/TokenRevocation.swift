import CredentialVault

/// Revoking tokens a sign-out removed (RFC 7009): after the local wipe, never instead of it. A
/// failed revocation is a warning on standard error; it never undoes or fails the sign-out.
enum TokenRevocation {
    /// The stored client, or the reason it cannot be used (a forged profile copy): read before the
    /// sign-out, reported after it by `revoke(_:stored:context:)`.
    static func storedClient(_ options: VaultOptions, context: CommandContext) async -> Result<StoredClientConfiguration?, VaultError> {
        do {
            return .success(try await context.storedClient(options))
        } catch let error as VaultError {
            return .failure(error)
        } catch {
            return .failure(VaultError(.io, "the OAuth client configuration could not be read"))
        }
    }

    /// Revokes `removed` with the stored client, if one is stored; says why not when it cannot be used.
    static func revoke(_ removed: Credentials?, stored: Result<StoredClientConfiguration?, VaultError>, options: VaultOptions,
                       server: ServerOptions, context: CommandContext) async {
        guard let removed else { return }
        switch stored {
        case .success(nil):
            return
        case let .success(stored?):
            await revoke(removed) { try await context.oauthClient(for: stored, options, server) }
        case let .failure(error):
            ErrorReport.note("warning: the tokens were not revoked at the server: \(TerminalText.escaped(error.message))")
        }
    }

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
