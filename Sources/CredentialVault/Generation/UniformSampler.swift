import VaultCrypto

/// Draws integers uniformly from `0..<bound` out of a source of random bytes, by rejection sampling.
///
/// A draw reads the fewest bytes that cover `bound` (1, 2 or 4) as an unsigned number `r`, and
/// rejects it when `r` is at or above the largest multiple of `bound` the width holds, drawing
/// again; the answer is `r % bound`. Every value then comes from the same number of `r`s, where
/// a plain `r % bound` would favour the small values (for 200 out of a byte, 0…55 twice as often).
package struct UniformSampler: Sendable {
    /// Fills a buffer with random bytes.
    package typealias ByteSource = @Sendable (UnsafeMutableRawBufferPointer) throws -> Void

    private let fill: ByteSource

    /// A sampler over `fill`; tests pass a fixed sequence.
    package init(randomBytes fill: @escaping ByteSource) { self.fill = fill }

    /// OpenSSL's CSPRNG (`RAND_bytes`, through `SecureRandom`).
    package static let secure = UniformSampler { buffer in
        let bytes = try SecureRandom.secureBytes(count: buffer.count)
        bytes.withUnsafeBytes { buffer.copyMemory(from: $0) }
    }

    /// How many draws one value may take before the source is taken to be broken. The chance that
    /// a working source is rejected this often is below 2^-1000 (each try is rejected less than half the time).
    package static let maximumAttempts = 1_000

    /// A uniformly distributed value in `0..<bound`.
    /// - Parameter bound: 1 … 2^32.
    /// - Throws: `CryptoError` from the source; `.invalidInput` when the source keeps giving rejected values.
    package func value(below bound: Int) throws -> Int {
        precondition(bound >= 1 && UInt64(bound) <= 1 << 32, "the bound must be 1 … 2^32")
        let width = bound <= 1 << 8 ? 1 : bound <= 1 << 16 ? 2 : 4
        let range = UInt64(1) << UInt64(8 * width)
        let limit = range - range % UInt64(bound)
        var raw = [UInt8](repeating: 0, count: width)
        defer { SecureWipe.wipe(&raw) }
        for _ in 0..<Self.maximumAttempts {
            try raw.withUnsafeMutableBytes { try fill($0) }
            let number = raw.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            if number < limit { return Int(number % UInt64(bound)) }
        }
        throw VaultError(.invalidInput, "the random source kept giving values out of range; nothing was generated")
    }
}
