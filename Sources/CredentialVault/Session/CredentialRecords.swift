import FoundationEssentials
import VaultCrypto

/// Reads and writes `Credentials` as entries of a user's namespace in the vault.
enum CredentialRecords {
    private struct TokenInfo: Codable {
        var tokenType: String
        var scopes: [String]
        /// Milliseconds since 1970; absent in records written before it existed.
        var issuedAtMilliseconds: Int64?
    }

    /// Stores the credentials, replacing the previous ones. A missing refresh or id
    /// token removes the stored one, so callers merge first when they mean to keep it.
    static func write(_ credentials: Credentials, owner: String, into transaction: inout VaultTransaction) throws {
        try transaction.put(NewEntry(name: SessionNamespaces.Reserved.accessToken, owner: owner, secret: credentials.accessToken,
                                     kind: .accessToken, expiresAt: credentials.expiresAt, transferable: false), replace: true)
        try replaceOptional(credentials.refreshToken, name: SessionNamespaces.Reserved.refreshToken, kind: .refreshToken,
                            owner: owner, in: &transaction)
        try replaceOptional(credentials.idToken, name: SessionNamespaces.Reserved.idToken, kind: .idToken,
                            owner: owner, in: &transaction)
        let info = try JSONEncoder().encode(TokenInfo(tokenType: credentials.tokenType, scopes: credentials.scopes,
                                                              issuedAtMilliseconds: credentials.issuedAt?.millisecondsSince1970))
        try transaction.put(NewEntry(name: SessionNamespaces.Reserved.tokenInfo, owner: owner, secret: SecureBytes(copying: info),
                                     kind: .generic, transferable: false), replace: true)
    }

    /// Reads the credentials of `owner`, or nil when there is no access token.
    static func read(owner: String, from transaction: borrowing VaultTransaction) throws -> Credentials? {
        guard let access = transaction.metadata(named: SessionNamespaces.Reserved.accessToken, owner: owner) else { return nil }
        let accessToken = try transaction.secret(named: SessionNamespaces.Reserved.accessToken, owner: owner)
        let refresh = transaction.metadata(named: SessionNamespaces.Reserved.refreshToken, owner: owner) != nil
            ? try transaction.secret(named: SessionNamespaces.Reserved.refreshToken, owner: owner) : nil
        let id = transaction.metadata(named: SessionNamespaces.Reserved.idToken, owner: owner) != nil
            ? try transaction.secret(named: SessionNamespaces.Reserved.idToken, owner: owner) : nil
        var info = TokenInfo(tokenType: "Bearer", scopes: [], issuedAtMilliseconds: nil)
        if transaction.metadata(named: SessionNamespaces.Reserved.tokenInfo, owner: owner) != nil {
            let bytes = try transaction.secret(named: SessionNamespaces.Reserved.tokenInfo, owner: owner)
            info = (try? bytes.withUnsafeBytes { try JSONDecoder().decode(TokenInfo.self, from: Data($0)) }) ?? info
        }
        return Credentials(accessToken: accessToken, refreshToken: refresh, idToken: id, tokenType: info.tokenType,
                           scopes: info.scopes, expiresAt: access.expiresAt,
                           issuedAt: info.issuedAtMilliseconds.map { Date(millisecondsSince1970: $0) })
    }

    private static func replaceOptional(_ token: SecureBytes?, name: String, kind: EntryKind, owner: String,
                                        in transaction: inout VaultTransaction) throws {
        if let token {
            try transaction.put(NewEntry(name: name, owner: owner, secret: token, kind: kind, transferable: false), replace: true)
        } else if transaction.metadata(named: name, owner: owner) != nil {
            try transaction.remove(named: name, owner: owner)
        }
    }
}
