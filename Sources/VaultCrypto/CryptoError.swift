/// An error from the crypto layer.
///
/// A struct around a private enum, so that new cases can be added without
/// breaking callers. No case ever carries key, nonce or plaintext bytes.
public struct CryptoError: Error, Sendable, Hashable, CustomStringConvertible {
    enum Kind: Sendable, Hashable {
        case authenticationFailure
        case invalidKeySize(expected: Int, actual: Int)
        case invalidNonceSize(expected: Int, actual: Int)
        case invalidTagSize(expected: Int, actual: Int)
        case invalidInputSize(what: String, actual: Int)
        case parameterOutOfBounds(parameter: String, detail: String)
        case randomGenerationFailed
        case openSSL(operation: String, detail: String)
        case unusableKey(detail: String)
        case invalidPadding
    }

    let kind: Kind

    init(_ kind: Kind) { self.kind = kind }

    /// An AEAD tag or MAC did not verify: wrong key, wrong associated data, or altered bytes.
    public static let authenticationFailure = CryptoError(.authenticationFailure)
    /// The operating system's random generator (through `RAND_bytes`) failed; no bytes were produced.
    public static let randomGenerationFailed = CryptoError(.randomGenerationFailed)

    /// A key had the wrong length for the algorithm.
    public static func invalidKeySize(expected: Int, actual: Int) -> CryptoError {
        CryptoError(.invalidKeySize(expected: expected, actual: actual))
    }
    /// A nonce had the wrong length (AES-256-GCM takes exactly 12 bytes).
    public static func invalidNonceSize(expected: Int, actual: Int) -> CryptoError {
        CryptoError(.invalidNonceSize(expected: expected, actual: actual))
    }
    /// A tag had the wrong length (AES-256-GCM takes exactly 16 bytes; truncated tags are refused).
    public static func invalidTagSize(expected: Int, actual: Int) -> CryptoError {
        CryptoError(.invalidTagSize(expected: expected, actual: actual))
    }
    /// An input was too large or otherwise unusable (names the input, never its bytes).
    public static func invalidInputSize(what: String, actual: Int) -> CryptoError {
        CryptoError(.invalidInputSize(what: what, actual: actual))
    }
    /// True for a failure inside libcrypto (with OpenSSL's error codes): usually the system's
    /// OpenSSL configuration refusing an algorithm (a provider or FIPS policy), or no memory.
    public var isLibraryFailure: Bool {
        if case .openSSL = kind { return true }
        return false
    }

    /// A KDF parameter was outside the bounds that the caller allowed; nothing was computed.
    public static func parameterOutOfBounds(_ parameter: String, _ detail: String) -> CryptoError {
        CryptoError(.parameterOutOfBounds(parameter: parameter, detail: detail))
    }
    /// libcrypto reported a failure; `detail` is the text of OpenSSL's error queue.
    public static func openSSL(operation: String, detail: String) -> CryptoError {
        CryptoError(.openSSL(operation: operation, detail: detail))
    }

    /// A CBC ciphertext whose length is not a positive multiple of the block size, or whose
    /// PKCS#7 padding is wrong after decryption: wrong key or IV, or altered bytes (CBC does not
    /// authenticate, so this is not a reliable tamper check).
    public static let invalidPadding = CryptoError(.invalidPadding)

    /// A public or private key that is refused: too short, not on its curve, or of another
    /// kind than the algorithm needs (`detail` names why, never key bytes).
    public static func unusableKey(_ detail: String) -> CryptoError {
        CryptoError(.unusableKey(detail: detail))
    }

    /// True when a key was refused (`unusableKey`).
    public var isUnusableKey: Bool {
        if case .unusableKey = kind { return true }
        return false
    }

    /// True when this is an authentication failure (the caller should say "wrong key or tampered").
    public var isAuthenticationFailure: Bool { kind == .authenticationFailure }

    /// A one-line explanation without any secret material.
    public var description: String {
        switch kind {
        case .authenticationFailure:
            return "authentication failed: wrong key, wrong associated data, or altered bytes"
        case let .invalidKeySize(expected, actual):
            return "invalid key size: expected \(expected) bytes, got \(actual)"
        case let .invalidNonceSize(expected, actual):
            return "invalid nonce size: expected \(expected) bytes, got \(actual)"
        case let .invalidTagSize(expected, actual):
            return "invalid tag size: expected \(expected) bytes, got \(actual)"
        case let .invalidInputSize(what, actual):
            return "invalid \(what) size: \(actual) bytes"
        case let .parameterOutOfBounds(parameter, detail):
            return "parameter \(parameter) out of bounds: \(detail)"
        case .randomGenerationFailed:
            return "the random number generator failed"
        case let .openSSL(operation, detail):
            return "OpenSSL \(operation) failed: \(detail)"
        case let .unusableKey(detail):
            return "unusable key: \(detail)"
        case .invalidPadding:
            return "invalid CBC length or padding: wrong key or IV, or altered bytes"
        }
    }
}
