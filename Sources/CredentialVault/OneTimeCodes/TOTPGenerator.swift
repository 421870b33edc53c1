import FoundationEssentials
import VaultCrypto

/// Time-based one-time codes (RFC 6238) over HOTP (RFC 4226), with the HMAC from OpenSSL.
public enum TOTPGenerator {
    /// The code for `date`: HOTP of the time step `floor(unix time / period)`.
    /// - Parameters:
    ///   - parameters: the seed, algorithm, digits and period.
    ///   - date: the time to compute the code for.
    /// - Returns: the code and the window of its time step.
    /// - Throws: `.invalidInput` for a time before 1970, or whose time step ends past year 9999; `CryptoError` when libcrypto fails.
    public static func code(for parameters: OTPAuthURI, at date: Date) throws -> OneTimeCode {
        let seconds = date.timeIntervalSince1970.rounded(.down)
        guard seconds >= 0 else { throw VaultError(.invalidInput, "a time before 1970-01-01T00:00:00Z has no TOTP code") }
        guard seconds < 253_402_300_800 else { throw VaultError(.invalidInput, "a time after the year 9999 has no TOTP code") }
        let step = Int64(seconds) / Int64(parameters.period)
        let start = step * Int64(parameters.period)
        // The step's end is the code's validUntil: it must be a time a timestamp can say (year 9999 at most).
        guard Double(start + Int64(parameters.period)) <= ISO8601Timestamp.latest else {
            throw VaultError(.invalidInput, "the code's time step would end after the year 9999; give a time at least \(parameters.period) seconds before its end")
        }
        let code = try hotp(seed: parameters.seed, counter: UInt64(step), digits: parameters.digits, algorithm: parameters.algorithm)
        return OneTimeCode(code: code,
                           validFrom: Date(timeIntervalSince1970: TimeInterval(start)),
                           validUntil: Date(timeIntervalSince1970: TimeInterval(start + Int64(parameters.period))))
    }

    /// The HOTP value for `counter` (RFC 4226 §5.3: dynamic truncation, modulo 10^digits).
    /// - Parameters:
    ///   - seed: the shared secret.
    ///   - counter: the moving factor, written as 8 big-endian bytes.
    ///   - digits: 6 to 8.
    ///   - algorithm: the HMAC.
    /// - Returns: the code with leading zeros.
    /// - Throws: `.invalidInput` for digits out of range; `CryptoError` when libcrypto fails.
    public static func hotp(seed: SecureBytes, counter: UInt64, digits: Int, algorithm: OTPAlgorithm) throws -> String {
        guard OTPAuthURI.digitRange.contains(digits) else { throw VaultError(.invalidInput, "a one-time code has 6, 7 or 8 digits") }
        let message = (0..<8).map { UInt8(truncatingIfNeeded: counter >> UInt64(56 - 8 * $0)) }
        let key = SymmetricKey(bytes: seed)
        var mac: [UInt8]
        switch algorithm {
        case .sha1: mac = try HMACSHA1.authenticationCode(for: message, using: key)
        case .sha256: mac = try HMACSHA256.authenticationCode(for: message, using: key)
        case .sha512: mac = try HMACSHA512.authenticationCode(for: message, using: key)
        }
        defer { SecureWipe.wipe(&mac) }
        guard let last = mac.last else { preconditionFailure("an HMAC tag is never empty") }
        let offset = Int(last & 0x0f)
        let binary = UInt32(mac[offset] & 0x7f) << 24 | UInt32(mac[offset + 1]) << 16 | UInt32(mac[offset + 2]) << 8 | UInt32(mac[offset + 3])
        var modulus: UInt32 = 1
        for _ in 0..<digits { modulus *= 10 }
        let value = String(binary % modulus)
        return String(repeating: "0", count: digits - value.count) + value
    }
}
