import FoundationEssentials
import VaultCrypto

/// Reads and writes `Credentials` as entries of a user's namespace in the vault.
enum CredentialRecords {
    struct TokenInfo: Codable {
        var tokenType: String
        var scopes: [String]
        /// Milliseconds since 1970; absent in records written before it existed.
        var issuedAtMilliseconds: Int64?
    }

    /// The names of the records a session's credentials are kept in.
    static let recordNames = [SessionNamespaces.Reserved.accessToken, SessionNamespaces.Reserved.refreshToken,
                              SessionNamespaces.Reserved.idToken, SessionNamespaces.Reserved.tokenInfo]

    /// Stores the credentials, replacing the previous ones. A missing refresh or id
    /// token removes the stored one, so callers merge first when they mean to keep it.
    static func write(_ credentials: Credentials, owner: String, into transaction: inout VaultTransaction) throws {
        let records = try entries(for: credentials, owner: owner)
        for record in records { try transaction.put(record, replace: true) }
        for name in recordNames where transaction.metadata(named: name, owner: owner) != nil && !records.contains(where: { $0.name == name }) {
            try transaction.remove(named: name, owner: owner)
        }
    }

    /// The records of `credentials`: the access token and the token info always, the refresh and
    /// id tokens when present.
    static func entries(for credentials: Credentials, owner: String) throws -> [NewEntry] {
        let info = try JSONEncoder().encode(TokenInfo(tokenType: credentials.tokenType, scopes: credentials.scopes,
                                                      issuedAtMilliseconds: credentials.issuedAt?.millisecondsSince1970))
        var records = [NewEntry(name: SessionNamespaces.Reserved.accessToken, owner: owner, secret: credentials.accessToken,
                                kind: .accessToken, expiresAt: credentials.expiresAt, transferable: false)]
        if let refresh = credentials.refreshToken {
            records.append(NewEntry(name: SessionNamespaces.Reserved.refreshToken, owner: owner, secret: refresh,
                                    kind: .refreshToken, transferable: false))
        }
        if let id = credentials.idToken {
            records.append(NewEntry(name: SessionNamespaces.Reserved.idToken, owner: owner, secret: id, kind: .idToken, transferable: false))
        }
        records.append(NewEntry(name: SessionNamespaces.Reserved.tokenInfo, owner: owner, secret: SecureBytes(copying: info),
                                kind: .generic, transferable: false))
        return records
    }

    /// Reads the credentials of `owner`, or nil when there is no access token.
    static func read(owner: String, from transaction: borrowing VaultTransaction) throws -> Credentials? {
        var records: [VaultEntry] = []
        for name in recordNames {
            guard let metadata = transaction.metadata(named: name, owner: owner) else { continue }
            records.append(VaultEntry(metadata: metadata, secret: try transaction.secret(named: name, owner: owner)))
        }
        return credentials(from: records)
    }

    /// The credentials in `records` (the entries of one owner named `recordNames`), or nil when
    /// there is no access token.
    static func credentials(from records: [VaultEntry]) -> Credentials? {
        func record(_ name: String) -> VaultEntry? { records.first { $0.metadata.name == name } }
        guard let access = record(SessionNamespaces.Reserved.accessToken) else { return nil }
        var info = TokenInfo(tokenType: "Bearer", scopes: [], issuedAtMilliseconds: nil)
        if let bytes = record(SessionNamespaces.Reserved.tokenInfo)?.secret {
            info = (try? bytes.withUnsafeBytes { try JSONDecoder().decode(TokenInfo.self, from: Data($0)) }) ?? info
        }
        return Credentials(accessToken: access.secret, refreshToken: record(SessionNamespaces.Reserved.refreshToken)?.secret,
                           idToken: record(SessionNamespaces.Reserved.idToken)?.secret, tokenType: info.tokenType,
                           scopes: info.scopes, expiresAt: access.metadata.expiresAt,
                           issuedAt: info.issuedAtMilliseconds.map { Date(millisecondsSince1970: $0) })
    }
}
