import CredentialVault
import FoundationEssentials

/// One credential in git's helper protocol (gitcredentials(7), git-credential(1)): what git
/// asks for (`get`), hands over (`store`) or rejects (`erase`).
///
/// Stored as the vault entry `git:PROTOCOL://USERNAME@HOST/PATH` (components
/// percent-encoded, `/PATH` only when git sends a path), kind `password`, with
/// `password_expiry_utc` as its expiry; the secret holds the `password` and
/// `oauth_refresh_token` lines.
struct GitCredential: Sendable {
    /// The prefix of every entry name the helper writes.
    static let namePrefix = "git:"
    /// The attributes whose values are secret.
    static let secretKeys: Set<String> = ["password", "oauth_refresh_token"]

    var protocolName: String?
    var host: String?
    var path: String?
    var username: String?
    var password: SecureBytes?
    /// `password_expiry_utc`: after it, the credential is not returned.
    var passwordExpiry: Date?
    var oauthRefreshToken: SecureBytes?

    init(protocolName: String? = nil, host: String? = nil, path: String? = nil, username: String? = nil) {
        self.protocolName = protocolName
        self.host = host
        self.path = path
        self.username = username
    }

    /// The attributes git sent; unknown ones (`capability[]`, `wwwauth[]`, …) are ignored. An
    /// attribute sent empty (`host=`, `username=`) is present with the empty value, as in git's
    /// own `credential_read`: `host=` matches only an empty host, never any host, and an empty
    /// username or password is stored and returned (t0303, "can store empty username").
    init(_ fields: CredentialFields) {
        func nonEmpty(_ key: String) -> String? { fields.text[key].flatMap { $0.isEmpty ? nil : $0 } }
        protocolName = fields.text["protocol"]
        host = fields.text["host"]
        path = fields.text["path"]
        username = fields.text["username"]
        password = fields.secrets["password"]
        oauthRefreshToken = fields.secrets["oauth_refresh_token"]
        passwordExpiry = nonEmpty("password_expiry_utc").flatMap { Int64($0) }.map { Date(timeIntervalSince1970: TimeInterval($0)) }
    }

    /// The vault entry name for this credential.
    var entryName: String {
        var name = Self.namePrefix + Self.encode(protocolName ?? "", keeping: "") + "://"
        if let username { name += Self.encode(username, keeping: "") + "@" }
        name += Self.encode(host ?? "", keeping: ":[]")
        if let path { name += "/" + Self.encode(path, keeping: "/!$&'()*+,;=:@") }
        return name
    }

    /// The identity (protocol, host, path, username) in an entry name written by `entryName`, or nil.
    init?(entryName name: String) {
        guard name.hasPrefix(Self.namePrefix) else { return nil }
        let rest = name.dropFirst(Self.namePrefix.count)
        guard let separator = rest.firstRange(of: "://") else { return nil }
        let afterScheme = rest[separator.upperBound...]
        let authority = afterScheme.prefix { $0 != "/" }
        let pathPart = afterScheme.dropFirst(authority.count)
        let at = authority.lastIndex(of: "@")
        guard let scheme = Self.decode(rest[..<separator.lowerBound]),
              let hostText = Self.decode(at.map { authority[authority.index(after: $0)...] } ?? authority) else { return nil }
        self.init(protocolName: scheme.isEmpty ? nil : scheme, host: hostText)
        if let at {
            guard let user = Self.decode(authority[..<at]) else { return nil }
            username = user
        }
        if !pathPart.isEmpty {
            guard let decoded = Self.decode(pathPart.dropFirst()) else { return nil }
            path = decoded
        }
    }

    /// git's own rule (credential_match): every identity attribute the request has must be
    /// present and equal in the stored one; attributes the request lacks match anything.
    func matches(_ stored: GitCredential) -> Bool {
        func check(_ want: String?, _ have: String?) -> Bool { want == nil || want == have }
        return check(protocolName, stored.protocolName) && check(host, stored.host)
            && check(path, stored.path) && check(username, stored.username)
    }

    /// The secret to store: `password` and `oauth_refresh_token` lines.
    func storedSecret() throws -> SecureBytes {
        var fields = CredentialFields()
        fields.secrets["password"] = password
        fields.secrets["oauth_refresh_token"] = oauthRefreshToken
        return try fields.encoded(order: ["password", "oauth_refresh_token"])
    }

    /// Fills `password` and `oauth_refresh_token` from a stored secret.
    mutating func readSecret(_ secret: SecureBytes) {
        let fields = CredentialFields.parse(secret, secretKeys: Self.secretKeys, storedRecord: true)
        password = fields.secrets["password"]
        oauthRefreshToken = fields.secrets["oauth_refresh_token"]
    }

    /// The answer to `get`: `username`, `password`, `password_expiry_utc`, `oauth_refresh_token`
    /// (the identity git asked about is not repeated).
    func response() throws -> SecureBytes {
        var fields = CredentialFields()
        fields.text["username"] = username
        fields.text["password_expiry_utc"] = passwordExpiry.map { String(Int64($0.timeIntervalSince1970)) }
        fields.secrets["password"] = password
        fields.secrets["oauth_refresh_token"] = oauthRefreshToken
        return try fields.encoded(order: ["username", "password", "password_expiry_utc", "oauth_refresh_token"])
    }

    // MARK: Percent-encoding of the name's components

    private static let unreserved = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~".utf8)

    /// `text` with every byte outside the unreserved set and `keeping` as `%XX`: the name is printable ASCII.
    static func encode(_ text: String, keeping: String) -> String {
        let kept = unreserved.union(keeping.utf8)
        var result = ""
        for byte in text.utf8 {
            if kept.contains(byte) {
                result.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                let hex = String(byte, radix: 16, uppercase: true)
                result += "%" + (hex.count == 1 ? "0" + hex : hex)
            }
        }
        return result
    }

    /// Undoes `encode`; nil for a malformed escape.
    static func decode(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8).makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%") {
                guard let high = iterator.next(), let low = iterator.next(),
                      let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16) else { return nil }
                bytes.append(value)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
