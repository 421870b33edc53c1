import CredentialVault

extension OAuthClient {
    /// Gets an access token for the client itself (RFC 6749 §4.4), for daemons.
    /// Needs a confidential client (`client_secret_basic` or `client_secret_post`).
    /// - Throws: `OAuthError`.
    public func clientCredentials() async throws -> Credentials {
        let url = try await endpoint(\.token, "token endpoint")
        var form = FormBody()
        form.append("grant_type", "client_credentials")
        if !configuration.scopes.isEmpty { form.append("scope", configuration.scopes.joined(separator: " ")) }
        let response = try await post(url, name: "token endpoint", form: form, retry: .idempotent)
        return try Self.credentials(from: response, endpoint: "token endpoint \(Self.display(url))")
    }
}
