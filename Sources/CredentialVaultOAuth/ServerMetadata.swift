import CredentialVault
import FoundationEssentials

/// What discovery learned about the server (OpenID Connect Discovery 1.0, RFC 8414).
public struct ServerMetadata: Sendable, Hashable {
    /// The issuer the document names (checked against the configured one).
    public var issuer: String
    /// The endpoints it lists.
    public var endpoints: OAuthEndpoints
    /// `grant_types_supported`, when listed.
    public var grantTypes: [String]
    /// `scopes_supported`, when listed ("openid" there means the server speaks OpenID Connect).
    public var scopes: [String]
    /// `authorization_response_iss_parameter_supported` (RFC 9207): the authorization response
    /// carries `iss`, and the client must check it.
    public var issuerInAuthorizationResponse: Bool

    /// Creates metadata.
    public init(issuer: String, endpoints: OAuthEndpoints, grantTypes: [String] = [], scopes: [String] = [],
                issuerInAuthorizationResponse: Bool = false) {
        self.issuer = issuer
        self.endpoints = endpoints
        self.grantTypes = grantTypes
        self.scopes = scopes
        self.issuerInAuthorizationResponse = issuerInAuthorizationResponse
    }

    /// Reads a metadata document; nil when it is not a JSON object with an issuer.
    static func parse(_ body: [UInt8]) -> ServerMetadata? {
        guard case .object(let members)? = try? JSONValue(parsing: body),
              let issuer = members["issuer"]?.stringValue else { return nil }
        func url(_ key: String) -> URL? { members[key]?.stringValue.flatMap(URL.init(string:)) }
        func strings(_ key: String) -> [String] {
            guard case .array(let values)? = members[key] else { return [] }
            return values.compactMap { $0.stringValue }
        }
        return ServerMetadata(issuer: issuer,
                              endpoints: OAuthEndpoints(token: url("token_endpoint"), revocation: url("revocation_endpoint"),
                                                        deviceAuthorization: url("device_authorization_endpoint"),
                                                        userinfo: url("userinfo_endpoint"),
                                                        authorization: url("authorization_endpoint"), jwks: url("jwks_uri")),
                              grantTypes: strings("grant_types_supported"), scopes: strings("scopes_supported"),
                              issuerInAuthorizationResponse: members["authorization_response_iss_parameter_supported"] == .bool(true))
    }

    /// The two documents merged: this one's endpoints first, the other's where this has none.
    func merged(with other: ServerMetadata) -> ServerMetadata {
        ServerMetadata(issuer: issuer, endpoints: endpoints.filling(from: other.endpoints),
                       grantTypes: grantTypes.isEmpty ? other.grantTypes : grantTypes,
                       scopes: scopes.isEmpty ? other.scopes : scopes,
                       issuerInAuthorizationResponse: issuerInAuthorizationResponse || other.issuerInAuthorizationResponse)
    }
}
