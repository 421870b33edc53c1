import FoundationEssentials
import VaultCrypto

/// The OAuth client configuration a session keeps (`vault client`, `vault signin --browser/--device`): everything that decides where a token or the
/// client secret is sent and whom to trust (issuer, client id, endpoints, authentication method,
/// scopes, grant, the CA bundle's path and SHA-256) is sealed in the vault, as the entry
/// `session.oauth-client` (its JSON, authenticated by the vault's key like every entry), beside
/// the client secret's entry `session.oauth-client-secret`; the same on a PostgreSQL store.
///
/// Versions before this one kept the configuration in the plain profile (top-level key
/// "oauthClient"), where anyone who can write the file could redirect the tokens. Such a copy is
/// never adopted silently: it is refused (65) until `vault client --seal` seals it, and a profile
/// copy that differs from the sealed one is refused as tampered.
package struct StoredClientConfiguration: Equatable, Sendable {
    static let profileKey = "oauthClient"
    /// The reserved entry (owner "") holding the client secret.
    package static let secretEntry = "session.oauth-client-secret"
    /// The reserved entry (owner "") holding the configuration's JSON.
    package static let sealedEntry = "session.oauth-client"
    /// The DPoP private key (`--dpop`), sealed like the client secret; never printed.
    package static let dpopKeyEntry = "session.oauth-dpop-key"
    /// Every reserved entry of the stored client (owner ""), which `vault client --remove` forgets.
    package static let entryNames = [sealedEntry, secretEntry, dpopKeyEntry]

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
    /// Where the browser sign-in sends the user (`--authorization-endpoint`), else discovered.
    package var authorizationEndpoint: String?
    package var caBundle: String?
    /// The SHA-256 of the CA bundle's contents when it was stored (hex): a changed bundle is refused.
    package var caBundleSHA256: String?
    /// Whether the client binds its tokens with DPoP (RFC 9449); the key is `dpopKeyEntry`.
    package var dpop: Bool = false

    /// The JSON object kept in the profile (or a fleet's store): the RFC spellings of the method and grant.
    package var jsonValue: JSONValue {
        var object: [String: JSONValue] = ["clientId": .string(clientID), "authMethod": .string(authMethod.rawValue),
                                           "grant": .string(grant.rawValue), "scopes": .array(scopes.map(JSONValue.string))]
        let optional: [(String, String?)] = [("issuer", issuer), ("tokenEndpoint", tokenEndpoint),
                                             ("revocationEndpoint", revocationEndpoint), ("deviceEndpoint", deviceEndpoint),
                                             ("authorizationEndpoint", authorizationEndpoint),
                                             ("caBundle", caBundle), ("caBundleSha256", caBundleSHA256)]
        for case let (key, value?) in optional { object[key] = .string(value) }
        if dpop { object["dpop"] = .bool(true) }
        return .object(object)
    }

    /// A configuration; `dpop` is off until set.
    package init(issuer: String?, clientID: String, authMethod: ClientAuthMethod = .none, grant: ClientGrant = .refreshToken, scopes: [String] = [],
         tokenEndpoint: String? = nil, revocationEndpoint: String? = nil, deviceEndpoint: String? = nil,
         authorizationEndpoint: String? = nil, caBundle: String? = nil, caBundleSHA256: String? = nil) {
        self.issuer = issuer
        self.clientID = clientID
        self.authMethod = authMethod
        self.grant = grant
        self.scopes = scopes
        self.tokenEndpoint = tokenEndpoint
        self.revocationEndpoint = revocationEndpoint
        self.deviceEndpoint = deviceEndpoint
        self.authorizationEndpoint = authorizationEndpoint
        self.caBundle = caBundle
        self.caBundleSHA256 = caBundleSHA256
    }

    /// Reads a stored configuration. - Throws: `.invalidInput` for a method or grant this version does not know.
    package init?(_ value: JSONValue?) throws {
        guard case .object(let members)? = value, let clientID = members["clientId"]?.stringValue else { return nil }
        let method = members["authMethod"]?.stringValue ?? ClientAuthMethod.none.rawValue
        let grant = members["grant"]?.stringValue ?? ClientGrant.refreshToken.rawValue
        guard let authMethod = ClientAuthMethod(rawValue: method) else {
            throw VaultError(.invalidInput, "the stored client authentication '\(TerminalText.escaped(method))' is unknown",
                             fix: "store the OAuth client configuration again", topic: .storedClientUnusable)
        }
        guard let clientGrant = ClientGrant(rawValue: grant) else {
            throw VaultError(.invalidInput, "the stored client grant '\(TerminalText.escaped(grant))' is unknown",
                             fix: "store the OAuth client configuration again", topic: .storedClientUnusable)
        }
        self.init(issuer: members["issuer"]?.stringValue, clientID: clientID, authMethod: authMethod, grant: clientGrant,
                  scopes: members["scopes"]?.arrayValue?.compactMap(\.stringValue) ?? [],
                  tokenEndpoint: members["tokenEndpoint"]?.stringValue,
                  revocationEndpoint: members["revocationEndpoint"]?.stringValue,
                  deviceEndpoint: members["deviceEndpoint"]?.stringValue,
                  authorizationEndpoint: members["authorizationEndpoint"]?.stringValue, caBundle: members["caBundle"]?.stringValue,
                  caBundleSHA256: members["caBundleSha256"]?.stringValue)
        dpop = members["dpop"] == .bool(true)
    }

    /// The server a pending revocation names, as the library's `OAuthClient` made from this
    /// configuration names it (`PendingRevocation.server(issuer:revocationEndpoint:)`).
    package var revocationServer: String {
        PendingRevocation.server(issuer: issuer.flatMap { URL(string: $0) }, revocationEndpoint: revocationEndpoint.flatMap { URL(string: $0) })
    }

    /// The copy an earlier version kept in the plain profile, if any (never used as it is).
    package static func profileCopy(directory: String, lockTimeout: Duration) throws -> StoredClientConfiguration? {
        try StoredClientConfiguration(try ProfileStore(directory: directory, lockTimeout: lockTimeout).load()?.extra[profileKey])
    }

    /// Removes the profile's copy (once the configuration is sealed, or forgotten).
    package static func removeProfileCopy(directory: String, lockTimeout: Duration) throws {
        let profiles = ProfileStore(directory: directory, lockTimeout: lockTimeout)
        guard try profiles.load()?.extra[profileKey] != nil else { return }
        try profiles.update { profile in profile.extra[profileKey] = nil }
    }

    /// The sealed configuration checked against a profile copy: a copy that is not sealed, or that
    /// differs from the sealed one, is refused (nothing is sent anywhere on its word).
    package static func checked(sealed: StoredClientConfiguration?, profileCopy: StoredClientConfiguration?) throws -> StoredClientConfiguration? {
        switch (sealed, profileCopy) {
        case (nil, nil):
            return nil
        case (nil, _?):
            throw VaultError(.tampered, "profile.json holds an OAuth client configuration that the vault does not seal (written by an "
                             + "earlier version, or by someone who can write the profile); it decides where tokens are sent, so it is not used",
                             fix: "check the issuer and endpoints it names, then seal it in the vault, or store the client configuration again",
                             topic: .storedClientProfileCopy(differs: false))
        case let (sealed?, copy?) where copy != sealed:
            throw VaultError(.tampered, "the OAuth client configuration in profile.json differs from the one sealed in the vault; "
                             + "nothing was sent", fix: "store the client configuration again, or remove the profile's \"oauthClient\"",
                             topic: .storedClientProfileCopy(differs: true))
        case let (sealed?, _):
            return sealed
        }
    }

    /// The SHA-256 (hex) of a CA bundle's contents.
    package static func fingerprint(ofBundle path: String) throws -> String {
        try fingerprint(of: try readBundle(path))
    }

    private static func readBundle(_ path: String) throws -> [UInt8] {
        try SecureFileSystem.readInputFile(path, maxBytes: 16 << 20)
    }

    private static func fingerprint(of bytes: [UInt8]) throws -> String {
        try SHA256.hash(bytes).hexString
    }

    /// The CA bundle's bytes, read once and checked against the SHA-256 sealed with the
    /// configuration: the client trusts exactly these bytes (no second read by path). Nil without a bundle.
    /// - Throws: `.tampered` when its contents changed since the configuration was stored.
    package func verifiedCABundle() throws -> [UInt8]? {
        guard let caBundle else { return nil }
        guard let expected = caBundleSHA256 else {
            throw VaultError(.tampered, "the stored CA bundle has no recorded fingerprint", path: caBundle,
                             fix: "store the client configuration again with its CA bundle", topic: .storedClientCABundle(changed: false))
        }
        let bytes = try Self.readBundle(caBundle)
        guard try Self.fingerprint(of: bytes) == expected else {
            throw VaultError(.tampered, "the CA bundle changed since the OAuth client was stored; it decides which servers are trusted",
                             path: caBundle, fix: "if the change is yours, store the client configuration again with its CA bundle",
                             topic: .storedClientCABundle(changed: true))
        }
        return bytes
    }

    /// The configuration sealed in a store (the vault file or PostgreSQL), if any.
    package static func load(from store: any SecretStorage) async throws -> StoredClientConfiguration? {
        let entry: VaultEntry
        do {
            entry = try await store.readEntry(named: sealedEntry, owner: "")
        } catch let error as VaultError where error.code == .notFound {
            return nil
        }
        let json = entry.secret.withUnsafeBytes { Array($0) }
        return try StoredClientConfiguration(try JSONValue(parsing: json))
    }

    /// Seals it in a store, with the client secret and the DPoP key when there are, in one transaction.
    package func save(to store: any SecretStorage, secret: SecureBytes?, dpopKey: SecureBytes? = nil) async throws {
        var entries = [NewEntry(name: Self.sealedEntry, secret: SecureBytes(copying: try jsonValue.serialized()), transferable: false)]
        if let secret { entries.append(NewEntry(name: Self.secretEntry, secret: secret, transferable: false)) }
        if let dpopKey { entries.append(NewEntry(name: Self.dpopKeyEntry, secret: dpopKey, transferable: false)) }
        _ = try await store.storeEntries(entries, replace: true)
    }

    /// Removes the sealed DPoP key, if there is one.
    package static func removeDPoPKey(from store: any SecretStorage) async throws {
        do {
            try await store.removeEntry(named: dpopKeyEntry, owner: "")
        } catch let error as VaultError where error.code == .notFound {
            return
        }
    }
}
