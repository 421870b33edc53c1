import FoundationEssentials
import NIOHTTP1

extension OAuthClient {
    /// Fetches RFC 8414 metadata (`/.well-known/oauth-authorization-server` with the issuer's
    /// path appended, then the issuer-relative form) and OpenID Connect discovery, and merges
    /// them: an OIDC document often lacks the revocation and device endpoints.
    /// Each document must name the configured issuer (RFC 8414 §3.3).
    func discover() async throws -> ServerMetadata {
        guard let issuer = configuration.issuer else {
            throw OAuthError(.configuration, endpoint: "discovery", detail: "no issuer is configured")
        }
        let base = issuer.absoluteString.hasSuffix("/") ? String(issuer.absoluteString.dropLast()) : issuer.absoluteString
        var candidates: [URL] = []
        if var components = URLComponents(url: issuer, resolvingAgainstBaseURL: false) {
            let path = components.path.hasSuffix("/") ? String(components.path.dropLast()) : components.path
            components.path = "/.well-known/oauth-authorization-server" + path
            components.query = nil
            if let url = components.url { candidates.append(url) }
        }
        candidates += [base + "/.well-known/oauth-authorization-server", base + "/.well-known/openid-configuration"]
            .compactMap(URL.init(string:))
        var found: ServerMetadata?
        var lastError: OAuthError?
        for url in candidates {
            do {
                let response = try await exchange(url, name: "discovery", method: .GET, headers: HTTPHeaders(), body: nil,
                                                  retry: .idempotent)
                guard let document = ServerMetadata.parse(response.body) else {
                    lastError = OAuthError(.transient, endpoint: "discovery \(Self.display(url))", status: response.status,
                                           detail: "the answer is not a metadata document")
                    continue
                }
                guard Self.sameIssuer(document.issuer, base) else {
                    throw OAuthError(.configuration, endpoint: "discovery \(Self.display(url))",
                                     detail: "the document names issuer '\(ServerText.sanitized(document.issuer))', not the configured one")
                }
                found = found.map { $0.merged(with: document) } ?? document
                if found?.endpoints.token != nil, found?.endpoints.revocation != nil,
                   found?.endpoints.deviceAuthorization != nil, found?.endpoints.userinfo != nil,
                   found?.endpoints.jwks != nil { break }
            } catch let error as OAuthError where error.status == 404 || error.kind == .configuration && error.status != nil {
                lastError = error
            }
        }
        guard let found else {
            throw lastError ?? OAuthError(.configuration, endpoint: "discovery", detail: "no metadata document was found")
        }
        return found
    }

    static func sameIssuer(_ a: String, _ b: String) -> Bool {
        func trimmed(_ s: String) -> String { s.hasSuffix("/") ? String(s.dropLast()) : s }
        return trimmed(a) == trimmed(b)
    }
}
