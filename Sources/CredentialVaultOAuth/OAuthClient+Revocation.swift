import CredentialVault
import VaultCrypto

extension OAuthClient {
    /// Revokes one token (RFC 7009 §2.1). The server answers 200 for tokens it does not know.
    /// - Parameters:
    ///   - token: the token.
    ///   - hint: "refresh_token" or "access_token".
    /// - Throws: `OAuthError`; `.configuration` when there is no revocation endpoint.
    public func revoke(_ token: SecureBytes, hint: String) async throws {
        let url = try await endpoint(\.revocation, "revocation endpoint")
        var form = FormBody()
        form.append("token", secret: token)
        form.append("token_type_hint", hint)
        _ = try await post(url, name: "revocation endpoint", form: form, retry: .idempotent)
    }

    /// Revokes the refresh token (which on most servers also ends its access tokens) and
    /// the access token. Never throws: failures are in the report.
    public func revokeAll(_ credentials: Credentials) async -> RevocationReport {
        do {
            guard try await optionalEndpoint(\.revocation, "revocation endpoint") != nil else {
                return RevocationReport(outcome: .noRevocationEndpoint, revoked: [])
            }
        } catch let error as OAuthError {
            return RevocationReport(outcome: .failed([error]), revoked: [])
        } catch {
            return RevocationReport(outcome: .failed([OAuthError(.transient, endpoint: "discovery", detail: "\(type(of: error))")]),
                                    revoked: [])
        }
        var revoked: [String] = []
        var failures: [OAuthError] = []
        let tokens = [(credentials.refreshToken, "refresh_token"), (Optional(credentials.accessToken), "access_token")]
        for case let (token?, hint) in tokens {
            do {
                try await revoke(token, hint: hint)
                revoked.append(hint)
            } catch let error as OAuthError {
                failures.append(error)
            } catch {
                failures.append(OAuthError(.transient, endpoint: "revocation endpoint", detail: "\(type(of: error))"))
            }
        }
        return RevocationReport(outcome: failures.isEmpty ? .revoked : .failed(failures), revoked: revoked)
    }
}
