/// What a stored secret is. Stored as one byte in the vault file.
public enum EntryKind: String, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
    /// An OAuth 2.0 / bearer access token.
    case accessToken
    /// An OAuth 2.0 refresh token.
    case refreshToken
    /// An OpenID Connect id token.
    case idToken
    /// A password.
    case password
    /// Anything else: API keys, cookies, app secrets.
    case generic
    /// A TOTP seed (RFC 6238), stored as its `otpauth://totp/…` URI (`OTPAuthURI`).
    /// Code 6: a build older than this kind refuses a file holding one (docs/FORMAT.md).
    case totp

    /// The byte written to the file (format v1).
    package var code: UInt8 {
        switch self {
        case .accessToken: 1
        case .refreshToken: 2
        case .idToken: 3
        case .password: 4
        case .generic: 5
        case .totp: 6
        }
    }

    /// Whether releases from before this kind existed cannot read it (code above 5: `totp`); a vault
    /// file holding one says so in its header (docs/FORMAT.md), so that they refuse it clearly.
    package var isNewerThanOriginalKinds: Bool { code > 5 }

    /// The kind for a byte from the file, or nil for an unknown byte.
    package init?(code: UInt8) {
        guard let kind = EntryKind.allCases.first(where: { $0.code == code }) else { return nil }
        self = kind
    }

    /// The raw name, e.g. "accessToken".
    public var description: String { rawValue }
}
