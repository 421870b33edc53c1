/// The HMAC an otpauth URI's `algorithm` names (RFC 6238 §1.2: SHA-1, SHA-256, SHA-512).
public enum OTPAlgorithm: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// HMAC-SHA1, the default when a URI names none.
    case sha1 = "SHA1"
    /// HMAC-SHA256.
    case sha256 = "SHA256"
    /// HMAC-SHA512.
    case sha512 = "SHA512"

    /// Reads the URI's value in any case (`sha256`, `SHA256`); nil for anything else.
    init?(uriValue text: String) {
        guard let algorithm = Self.allCases.first(where: { $0.rawValue == text.uppercased() }) else { return nil }
        self = algorithm
    }

    /// The name as a URI writes it, e.g. "SHA256".
    public var description: String { rawValue }
}
