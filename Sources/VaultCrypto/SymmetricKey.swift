import FoundationEssentials

/// A symmetric key held in zeroising memory.
public struct SymmetricKey: Sendable, Equatable, CustomStringConvertible {
    /// The key bytes. Compared in constant time; never printed.
    public let bytes: SecureBytes

    /// Wraps existing key material.
    public init(bytes: SecureBytes) { self.bytes = bytes }

    /// Copies existing key material into zeroising memory.
    public init(copying data: some ContiguousBytes) { self.bytes = SecureBytes(copying: data) }

    /// A new random key of `byteCount` bytes (default 32, for AES-256).
    /// - Throws: `CryptoError.randomGenerationFailed`.
    public static func generate(byteCount: Int = 32) throws -> SymmetricKey {
        SymmetricKey(bytes: try SecureRandom.secureBytes(count: byteCount))
    }

    /// The key length in bytes.
    public var byteCount: Int { bytes.count }

    /// Says the length, never the key.
    public var description: String { "SymmetricKey(\(bytes.count * 8) bits, redacted)" }
}
