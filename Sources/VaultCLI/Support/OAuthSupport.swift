import CredentialVault
import FoundationEssentials
import VaultCrypto

/// The OAuth client configuration the CLI keeps: issuer, client id, endpoints, scopes and
/// grant in the plain profile (top-level key "oauthClient"), the client secret (if any) in
/// the vault as the entry `session.oauth-client-secret`. On a PostgreSQL store (shared by a fleet)
/// there is no profile: the configuration is the entry `session.oauth-client` (its JSON, sealed like
/// every entry) beside the secret's.
package struct StoredClientConfiguration: Equatable, Sendable {
    static let profileKey = "oauthClient"
    static let secretEntry = "session.oauth-client-secret"
    static let fleetEntry = "session.oauth-client"

    package var issuer: String?
    package var clientID: String
    /// How the client authenticates at the token endpoint.
    package var authMethod: ClientAuthMethod
    /// How `vault token` gets a token: a user's refresh token, or the client's own credentials.
    package var grant: ClientGrant
    package var scopes: [String]
    package var tokenEndpoint: String?
    package var revocationEndpoint: String?
    package var deviceEndpoint: String?
    package var caBundle: String?

    /// The JSON object kept in the profile (or a fleet's store): the RFC spellings of the method and grant.
    var jsonValue: JSONValue {
        var object: [String: JSONValue] = ["clientId": .string(clientID), "authMethod": .string(authMethod.rawValue),
                                           "grant": .string(grant.rawValue), "scopes": .array(scopes.map(JSONValue.string))]
        let optional: [(String, String?)] = [("issuer", issuer), ("tokenEndpoint", tokenEndpoint),
                                             ("revocationEndpoint", revocationEndpoint), ("deviceEndpoint", deviceEndpoint),
                                             ("caBundle", caBundle)]
        for case let (key, value?) in optional { object[key] = .string(value) }
        return .object(object)
    }

    init(issuer: String?, clientID: String, authMethod: ClientAuthMethod = .none, grant: ClientGrant = .refreshToken, scopes: [String] = [],
         tokenEndpoint: String? = nil, revocationEndpoint: String? = nil, deviceEndpoint: String? = nil, caBundle: String? = nil) {
        self.issuer = issuer
        self.clientID = clientID
        self.authMethod = authMethod
        self.grant = grant
        self.scopes = scopes
        self.tokenEndpoint = tokenEndpoint
        self.revocationEndpoint = revocationEndpoint
        self.deviceEndpoint = deviceEndpoint
        self.caBundle = caBundle
    }

    /// Reads a stored configuration. - Throws: `.invalidInput` for a method or grant this version does not know.
    init?(_ value: JSONValue?) throws {
        guard case .object(let members)? = value, let clientID = members["clientId"]?.stringValue else { return nil }
        let method = members["authMethod"]?.stringValue ?? ClientAuthMethod.none.rawValue
        let grant = members["grant"]?.stringValue ?? ClientGrant.refreshToken.rawValue
        guard let authMethod = ClientAuthMethod(rawValue: method) else {
            throw VaultError(.invalidInput, "the stored client authentication '\(TerminalText.escaped(method))' is unknown",
                             fix: "store the client again with 'vault client'")
        }
        guard let clientGrant = ClientGrant(rawValue: grant) else {
            throw VaultError(.invalidInput, "the stored client grant '\(TerminalText.escaped(grant))' is unknown",
                             fix: "store the client again with 'vault client'")
        }
        self.init(issuer: members["issuer"]?.stringValue, clientID: clientID, authMethod: authMethod, grant: clientGrant,
                  scopes: members["scopes"]?.arrayValue?.compactMap(\.stringValue) ?? [],
                  tokenEndpoint: members["tokenEndpoint"]?.stringValue,
                  revocationEndpoint: members["revocationEndpoint"]?.stringValue,
                  deviceEndpoint: members["deviceEndpoint"]?.stringValue, caBundle: members["caBundle"]?.stringValue)
    }

    /// The stored configuration, if any.
    static func load(_ options: VaultOptions) throws -> StoredClientConfiguration? {
        try StoredClientConfiguration(try ProfileStore(directory: options.directory, lockTimeout: options.lockTimeout).load()?.extra[profileKey])
    }

    /// Saves it in the profile (the secret is saved separately, in the vault).
    func save(_ options: VaultOptions) throws {
        let value = jsonValue
        try ProfileStore(directory: options.directory, lockTimeout: options.lockTimeout).update { profile in
            profile.extra[Self.profileKey] = value
        }
    }

    /// The configuration kept in a fleet's store, if any.
    static func load(from store: any SecretStorage) async throws -> StoredClientConfiguration? {
        let entry: VaultEntry
        do {
            entry = try await store.readEntry(named: fleetEntry, owner: "")
        } catch let error as VaultError where error.code == .notFound {
            return nil
        }
        let json = entry.secret.withUnsafeBytes { Array($0) }
        return try StoredClientConfiguration(try JSONValue(parsing: json))
    }

    /// Saves it in a fleet's store, with the client secret when there is one, in one transaction.
    func save(to store: any SecretStorage, secret: SecureBytes?) async throws {
        var entries = [NewEntry(name: Self.fleetEntry, secret: SecureBytes(copying: try jsonValue.serialized()), transferable: false)]
        if let secret { entries.append(NewEntry(name: Self.secretEntry, secret: secret, transferable: false)) }
        _ = try await store.storeEntries(entries, replace: true)
    }
}

/// How an OAuth client authenticates at the token endpoint (RFC 6749 §2.3, OIDC Core §9).
package enum ClientAuthMethod: String, Sendable, CaseIterable {
    /// A public client: no secret.
    case none
    /// The secret in an `Authorization: Basic` header.
    case clientSecretBasic = "client_secret_basic"
    /// The secret in the form body.
    case clientSecretPost = "client_secret_post"

    /// Whether the method sends a client secret (which is then kept in the vault).
    package var sendsSecret: Bool { self != .none }
}

/// How `vault token` gets a token for a stored client.
package enum ClientGrant: String, Sendable, CaseIterable {
    /// A user signed in; the token is refreshed with the refresh token (RFC 6749 §6).
    case refreshToken = "refresh_token"
    /// A daemon: the client fetches a token for itself (RFC 6749 §4.4).
    case clientCredentials = "client_credentials"
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
}
