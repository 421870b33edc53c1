import FoundationEssentials
import VaultCrypto

/// A TOTP seed and its parameters, as an `otpauth://totp/LABEL?secret=BASE32&…` URI carries them
/// (Google Authenticator's key URI format: `issuer`, `algorithm` SHA1/SHA256/SHA512, `digits`
/// 6–8, `period` in seconds).
///
/// Parsed from the URI's bytes without turning the secret into a `String`: the decoded seed lives
/// in `SecureBytes`. A malformed URI is refused with `.invalidInput` naming the parameter, never
/// quoting any part of the URI (a mistyped key could hold the secret).
public struct OTPAuthURI: Sendable, CustomStringConvertible {
    /// The label (`issuer:account` by convention), percent-decoded; may be empty.
    public let label: String
    /// The `issuer` parameter, when there is one.
    public let issuer: String?
    /// The decoded seed.
    public let seed: SecureBytes
    /// The HMAC: SHA1 unless the URI says otherwise.
    public let algorithm: OTPAlgorithm
    /// How many digits a code has: 6 unless the URI says otherwise.
    public let digits: Int
    /// The time step in seconds: 30 unless the URI says otherwise.
    public let period: Int

    /// The digit counts RFC 4226 allows a code (§5.3: at least 6; 8 is the most HMAC truncation gives sensibly).
    public static let digitRange = 6...8
    /// The periods accepted, in seconds: a step longer than a day is no time-based code.
    public static let periodRange = 1...86_400

    /// Makes the parameters of a seed that came without a URI.
    /// - Throws: `.invalidInput` for an empty seed or digits/period out of range.
    public init(seed: SecureBytes, label: String, issuer: String? = nil, algorithm: OTPAlgorithm = .sha1,
                digits: Int = 6, period: Int = 30) throws {
        guard !seed.isEmpty else { throw Self.invalid("secret", "is empty") }
        guard Self.digitRange.contains(digits) else { throw Self.invalid("digits", "must be 6, 7 or 8") }
        guard Self.periodRange.contains(period) else { throw Self.invalid("period", "must be 1 to 86400 seconds") }
        self.seed = seed
        self.label = label
        self.issuer = issuer
        self.algorithm = algorithm
        self.digits = digits
        self.period = period
    }

    /// Parses an `otpauth://totp/…` URI; one trailing line break and surrounding spaces are ignored.
    /// - Parameter uri: the URI's bytes (it holds the secret).
    /// - Throws: `.invalidInput` naming what is wrong: the scheme, the type (`hotp` is not supported),
    ///   the label, a repeated parameter, or `secret` (missing, empty or not base32), `algorithm`,
    ///   `digits`, `period`, `issuer`, `encoder` (KeePassXC's Steam codes).
    public init(parsing uri: SecureBytes) throws {
        self = try uri.withUnsafeBytes { try Self.parse($0) }
    }

    /// Makes the parameters of a bare base32 secret (what Bitwarden and others store instead of a URI),
    /// with the defaults: SHA1, 6 digits, 30 seconds. Spaces and hyphens between groups are ignored.
    /// - Throws: `.invalidInput` when the text is not base32.
    public init(base32Secret: SecureBytes, label: String, issuer: String? = nil) throws {
        let seed: SecureBytes? = base32Secret.withUnsafeBytes { text in
            var compact = [UInt8](text.filter { $0 != UInt8(ascii: " ") && $0 != UInt8(ascii: "-") })
            defer { SecureWipe.wipe(&compact) }
            return compact.withUnsafeBytes { Base32.decode($0) }
        }
        guard let seed else { throw Self.invalid("secret", "is not base32 (A-Z, 2-7)") }
        try self.init(seed: seed, label: label, issuer: issuer)
    }

    /// Whether `bytes` start like an otpauth URI (`otpauth:` in any case), to tell one from a bare secret.
    public static func looksLikeURI(_ bytes: SecureBytes) -> Bool {
        bytes.withUnsafeBytes { buffer in
            let prefix = Array("otpauth:".utf8)
            guard buffer.count >= prefix.count else { return false }
            return zip(buffer.prefix(prefix.count), prefix).allSatisfy { lowercased($0) == $1 }
        }
    }

    /// The URI written back in a canonical form: every parameter spelled out, the secret in
    /// upper-case base32 without padding.
    public var uri: SecureBytes {
        // The parts around the seed name no secret; only the seed's base32 needs zeroising memory.
        let head = Array("otpauth://totp/".utf8) + Self.percentEncoded(label) + Array("?secret=".utf8)
        var tail: [UInt8] = []
        if let issuer { tail += Array("&issuer=".utf8) + Self.percentEncoded(issuer) }
        tail += Array("&algorithm=\(algorithm.rawValue)&digits=\(digits)&period=\(period)".utf8)
        return SecureBytes(copying: head).appending(Base32.encode(seed)).appending(SecureBytes(copying: tail))
    }

    /// Names the parameters, never the seed.
    public var description: String {
        "OTPAuthURI(\(algorithm), \(digits) digits, \(period) s, seed redacted)"
    }
}

extension OTPAuthURI {
    private static func invalid(_ parameter: String, _ problem: String) -> VaultError {
        VaultError(.invalidInput, "the otpauth URI's '\(parameter)' \(problem)")
    }

    private static func lowercased(_ byte: UInt8) -> UInt8 {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte + 32 : byte
    }

    private static func isBlank(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r")
    }

    /// Text of a non-secret part: percent-decoded, valid UTF-8, no control characters.
    private static func text(_ bytes: some Collection<UInt8>, part: String) throws -> String {
        guard let decoded = bytes.percentDecoded(), let text = String(validating: decoded, as: UTF8.self),
              !text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw invalid(part, "is not valid percent-encoded UTF-8 text")
        }
        return text
    }

    private static func parse(_ whole: UnsafeRawBufferPointer) throws -> OTPAuthURI {
        var start = 0, end = whole.count
        while start < end, isBlank(whole[start]) { start += 1 }
        while end > start, isBlank(whole[end - 1]) { end -= 1 }
        let uri = UnsafeRawBufferPointer(rebasing: whole[start..<end])

        let scheme = Array("otpauth://".utf8)
        guard uri.count >= scheme.count, zip(uri.prefix(scheme.count), scheme).allSatisfy({ lowercased($0) == $1 }) else {
            throw VaultError(.invalidInput, "the text is not an otpauth URI: the 'scheme' must be otpauth://")
        }
        var rest = uri[scheme.count...]
        guard let slash = rest.firstIndex(of: UInt8(ascii: "/")) else { throw invalid("type", "is missing (otpauth://totp/LABEL?secret=…)") }
        let type = rest[rest.startIndex..<slash].map(lowercased)
        guard type == Array("totp".utf8) else {
            if type == Array("hotp".utf8) { throw invalid("type", "is hotp: counter-based codes are not supported, only totp") }
            throw invalid("type", "must be totp")
        }
        rest = rest[(slash + 1)...]
        if let hash = rest.firstIndex(of: UInt8(ascii: "#")) { rest = rest[rest.startIndex..<hash] }
        let question = rest.firstIndex(of: UInt8(ascii: "?")) ?? rest.endIndex
        let label = try text(rest[rest.startIndex..<question], part: "label")
        let query = question < rest.endIndex ? rest[(question + 1)...] : rest[rest.endIndex...]

        var seen: Set<String> = []
        var seed: SecureBytes?
        var issuer: String?
        var algorithm = OTPAlgorithm.sha1
        var digits = 6, period = 30
        let fields = query.split(separator: UInt8(ascii: "&")).compactMap { field -> (key: String, value: Slice<UnsafeRawBufferPointer>)? in
            let equals = field.firstIndex(of: UInt8(ascii: "=")) ?? field.endIndex
            // A parameter name that is not plain text is no parameter we know: ignored, never quoted.
            guard let key = String(validating: field[field.startIndex..<equals], as: UTF8.self)?.lowercased() else { return nil }
            return (key, equals < field.endIndex ? field[(equals + 1)...] : field[field.endIndex...])
        }
        // KeePassXC writes Steam Guard entries as `encoder=steam` (with digits=5): their codes are
        // not RFC 6238 digits, and saying so is clearer than refusing the digits.
        if fields.contains(where: { $0.key == "encoder" }) {
            throw invalid("encoder", "is not supported: only RFC 6238 codes of digits are")
        }
        for (key, value) in fields {
            guard ["secret", "issuer", "algorithm", "digits", "period"].contains(key) else { continue }
            guard seen.insert(key).inserted else { throw invalid(key, "appears more than once") }
            switch key {
            case "secret":
                guard var decoded = value.percentDecoded() else { throw invalid("secret", "is not base32 (A-Z, 2-7)") }
                defer { SecureWipe.wipe(&decoded) }
                guard !decoded.isEmpty else { throw invalid("secret", "is empty") }
                guard let bytes = decoded.withUnsafeBytes({ Base32.decode($0) }) else { throw invalid("secret", "is not base32 (A-Z, 2-7)") }
                guard !bytes.isEmpty else { throw invalid("secret", "is empty") }
                seed = bytes
            case "issuer":
                issuer = try text(value, part: "issuer")
            case "algorithm":
                guard let named = OTPAlgorithm(uriValue: try text(value, part: "algorithm")) else {
                    throw invalid("algorithm", "must be SHA1, SHA256 or SHA512")
                }
                algorithm = named
            case "digits":
                guard let number = decimal(value), digitRange.contains(number) else { throw invalid("digits", "must be 6, 7 or 8") }
                digits = number
            default:
                guard let number = decimal(value), periodRange.contains(number) else {
                    throw invalid("period", "must be a whole number of seconds from 1 to 86400")
                }
                period = number
            }
        }
        guard let seed else { throw invalid("secret", "is missing") }
        return try OTPAuthURI(seed: seed, label: label, issuer: issuer, algorithm: algorithm, digits: digits, period: period)
    }

    /// A decimal number of at most 6 digits, nothing else; nil otherwise.
    private static func decimal(_ bytes: some Collection<UInt8>) -> Int? {
        guard (1...6).contains(bytes.count), bytes.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else { return nil }
        return bytes.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
    }

    /// RFC 3986 unreserved characters kept, everything else `%XX`.
    private static func percentEncoded(_ text: String) -> [UInt8] {
        let hex = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: ":"), UInt8(ascii: "@"):
                out.append(byte)
            default:
                out += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0f)]]
            }
        }
        return out
    }
}
