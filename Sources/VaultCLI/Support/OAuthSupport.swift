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
    /// "none", "client_secret_basic" or "client_secret_post".
    package var authMethod: String
    /// "refresh_token" (a user signs in) or "client_credentials" (a daemon).
    package var grant: String
    package var scopes: [String]
    package var tokenEndpoint: String?
    package var revocationEndpoint: String?
    package var deviceEndpoint: String?
    package var caBundle: String?

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
    func client(secretFrom store: any SecretStorage) async throws -> any CommandOAuthClient {
        try client(secret: needsSecret ? try await store.readEntry(named: Self.secretEntry, owner: "").secret : nil)
    }

    /// The client, with the secret from the vault when the method needs one.
    func client(_ options: VaultOptions) throws -> any CommandOAuthClient {
        guard needsSecret else { return try client(secret: nil) }
        let key = try KeySources.current(options, confirmNew: false)
        return try client(secret: try SecretStore.open(in: options.directory, key: key).secret(named: Self.secretEntry))
    }

    /// The client, authenticated with `secret` when the method needs one (through `vault-oauth`'s
    /// OAuth support; `OAuthHelper.ensureLinked()` has handed the command over before this).
    func client(secret: SecureBytes?) throws -> any CommandOAuthClient {
        try OAuthHelper.required().client(for: self, secret: secret)
    }

    /// Whether the authentication method sends a client secret.
    var needsSecret: Bool { authMethod == "client_secret_basic" || authMethod == "client_secret_post" }
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

    /// A session whose expiry judgement uses `leeway` seconds (60 when nil).
    static func session(_ options: VaultOptions, leeway: Int64?) throws -> SessionManager {
        let key = SecretStore.exists(in: options.directory) ? try KeySources.current(options, confirmNew: false) : nil
        return SessionManager(directory: options.directory, key: key,
                              configuration: SessionConfiguration(leeway: .seconds(leeway ?? 60), lockTimeout: options.lockTimeout))
    }
}
