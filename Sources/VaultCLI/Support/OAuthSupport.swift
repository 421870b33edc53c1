import CredentialVault
import CredentialVaultOAuth
import FoundationEssentials
import VaultCrypto

/// The OAuth client configuration the CLI keeps: issuer, client id, endpoints, scopes and
/// grant in the plain profile (top-level key "oauthClient"), the client secret (if any) in
/// the vault as the entry `session.oauth-client-secret`. On a PostgreSQL store (shared by a fleet)
/// there is no profile: the configuration is the entry `session.oauth-client` (its JSON, sealed like
/// every entry) beside the secret's.
struct StoredClientConfiguration: Equatable {
    static let profileKey = "oauthClient"
    static let secretEntry = "session.oauth-client-secret"
    static let fleetEntry = "session.oauth-client"

    var issuer: String?
    var clientID: String
    /// "none", "client_secret_basic" or "client_secret_post".
    var authMethod: String
    /// "refresh_token" (a user signs in) or "client_credentials" (a daemon).
    var grant: String
    var scopes: [String]
    var tokenEndpoint: String?
    var revocationEndpoint: String?
    var deviceEndpoint: String?
    var caBundle: String?

    var jsonValue: JSONValue {
        var object: [String: JSONValue] = ["clientId": .string(clientID), "authMethod": .string(authMethod),
                                           "grant": .string(grant), "scopes": .array(scopes.map(JSONValue.string))]
        let optional: [(String, String?)] = [("issuer", issuer), ("tokenEndpoint", tokenEndpoint),
                                             ("revocationEndpoint", revocationEndpoint), ("deviceEndpoint", deviceEndpoint),
                                             ("caBundle", caBundle)]
        for case let (key, value?) in optional { object[key] = .string(value) }
        return .object(object)
    }

    init(issuer: String?, clientID: String, authMethod: String = "none", grant: String = "refresh_token", scopes: [String] = [],
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

    init?(_ value: JSONValue?) {
        guard case .object(let members)? = value, let clientID = members["clientId"]?.stringValue else { return nil }
        self.init(issuer: members["issuer"]?.stringValue, clientID: clientID,
                  authMethod: members["authMethod"]?.stringValue ?? "none",
                  grant: members["grant"]?.stringValue ?? "refresh_token",
                  scopes: members["scopes"]?.arrayValue?.compactMap(\.stringValue) ?? [],
                  tokenEndpoint: members["tokenEndpoint"]?.stringValue,
                  revocationEndpoint: members["revocationEndpoint"]?.stringValue,
                  deviceEndpoint: members["deviceEndpoint"]?.stringValue, caBundle: members["caBundle"]?.stringValue)
    }

    /// The stored configuration, if any.
    static func load(_ options: VaultOptions) throws -> StoredClientConfiguration? {
        StoredClientConfiguration(try ProfileStore(directory: options.directory, lockTimeout: options.lockTimeout).load()?.extra[profileKey])
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
        return StoredClientConfiguration(try JSONValue(parsing: json))
    }

    /// Saves it in a fleet's store, with the client secret when there is one, in one transaction.
    func save(to store: any SecretStorage, secret: SecureBytes?) async throws {
        var entries = [NewEntry(name: Self.fleetEntry, secret: SecureBytes(copying: try jsonValue.serialized()), transferable: false)]
        if let secret { entries.append(NewEntry(name: Self.secretEntry, secret: secret, transferable: false)) }
        _ = try await store.storeEntries(entries, replace: true)
    }

    /// The client, with the secret from a fleet's store when the method needs one.
    func client(secretFrom store: any SecretStorage) async throws -> OAuthClient {
        let needsSecret = authMethod == "client_secret_basic" || authMethod == "client_secret_post"
        return try client(secret: needsSecret ? try await store.readEntry(named: Self.secretEntry, owner: "").secret : nil)
    }

    /// The client, with the secret from the vault when the method needs one.
    func client(_ options: VaultOptions) throws -> OAuthClient {
        let needsSecret = authMethod == "client_secret_basic" || authMethod == "client_secret_post"
        guard needsSecret else { return try client(secret: nil) }
        let key = try KeySources.current(options, confirmNew: false)
        return try client(secret: try SecretStore.open(in: options.directory, key: key).secret(named: Self.secretEntry))
    }

    /// The client, authenticated with `secret` when the method needs one.
    func client(secret: SecureBytes?) throws -> OAuthClient {
        func url(_ text: String?, _ what: String) throws -> URL? {
            guard let text else { return nil }
            guard let url = URL(string: text), url.scheme != nil, url.host != nil else {
                throw VaultError(.invalidInput, "the stored \(what) '\(text)' is not a URL", fix: "store the client again with 'vault client'")
            }
            return url
        }
        let authentication: ClientAuthentication
        switch authMethod {
        case "none":
            authentication = .none
        case "client_secret_basic", "client_secret_post":
            guard let secret else {
                throw VaultError(.notFound, "the stored client's secret is missing", fix: "store the client again with 'vault client'")
            }
            authentication = authMethod == "client_secret_basic" ? .clientSecretBasic(secret) : .clientSecretPost(secret)
        default:
            throw VaultError(.invalidInput, "the stored client authentication '\(authMethod)' is unknown",
                             fix: "store the client again with 'vault client'")
        }
        return try OAuthClient(configuration: OAuthConfiguration(
            issuer: try url(issuer, "issuer"),
            endpoints: OAuthEndpoints(token: try url(tokenEndpoint, "token endpoint"),
                                      revocation: try url(revocationEndpoint, "revocation endpoint"),
                                      deviceAuthorization: try url(deviceEndpoint, "device endpoint")),
            clientID: clientID, authentication: authentication, scopes: scopes, caBundlePath: caBundle))
    }
}

/// How the CLI reports `OAuthError`s.
enum OAuthSupport {
    /// 69 for transient failures (the session is kept), 77 for a dead grant, 76 for the rest.
    static func exitStatus(for error: OAuthError) -> Int32 {
        switch error.kind {
        case .transient: VaultExitStatus.serverUnavailable
        case .invalidGrant: VaultExitStatus.permission
        case .configuration, .accessDenied, .expiredToken, .insecureEndpoint: VaultExitStatus.serverRefused
        }
    }

    static func hint(for error: OAuthError) -> String? {
        switch error.kind {
        case .transient: "nothing changed and the session is kept; try again later"
        case .invalidGrant: "sign in again"
        case .configuration: "check the client id, secret and endpoints ('vault client')"
        case .accessDenied: "the sign-in was declined at the verification page"
        case .expiredToken: "the code expired; run 'vault signin --device' again"
        case .insecureEndpoint: "use https (plain http is allowed only to 127.0.0.1, ::1 or localhost)"
        }
    }

    /// Runs `body` with `client`, then shuts the client down whatever happened.
    static func using<T>(_ client: OAuthClient, _ body: (OAuthClient) async throws -> T) async throws -> T {
        do {
            let result = try await body(client)
            try? await client.shutdown()
            return result
        } catch {
            try? await client.shutdown()
            throw error
        }
    }

    /// A session whose expiry judgement uses `leeway` seconds (60 when nil).
    static func session(_ options: VaultOptions, leeway: Int64?) throws -> SessionManager {
        let key = SecretStore.exists(in: options.directory) ? try KeySources.current(options, confirmNew: false) : nil
        return SessionManager(directory: options.directory, key: key,
                              configuration: SessionConfiguration(leeway: .seconds(leeway ?? 60), lockTimeout: options.lockTimeout))
    }
}
