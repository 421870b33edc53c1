import VaultCrypto

/// The names of the temporary files that atomic writes rename into place:
/// ".<basename>.tmp.<16 lowercase hex digits>", hidden and in the same directory.
enum TemporaryFileName {
    /// Number of random hex digits after the prefix.
    static let randomDigitCount = 16

    /// A fresh temporary name for `basename`, with 64 random bits from `SecureRandom`.
    /// - Throws: `VaultError` `.io` when the random generator fails.
    static func make(for basename: String, path: String) throws(VaultError) -> String {
        let random: [UInt8]
        do {
            random = try SecureRandom.bytes(count: randomDigitCount / 2)
        } catch {
            throw VaultError(.io, "the random generator failed while naming a temporary file", path: path)
        }
        let digits = Array("0123456789abcdef".utf8)
        var hex = [UInt8]()
        for byte in random {
            hex.append(digits[Int(byte >> 4)])
            hex.append(digits[Int(byte & 0x0f)])
        }
        return prefix(for: basename) + String(decoding: hex, as: UTF8.self)
    }

    /// Whether `name` is a temporary file of `basename` (exactly the pattern, nothing looser).
    static func matches(_ name: String, for basename: String) -> Bool {
        let prefix = prefix(for: basename)
        guard name.hasPrefix(prefix) else { return false }
        let suffix = name.utf8.dropFirst(prefix.utf8.count)
        return suffix.count == randomDigitCount
            && suffix.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0)
                || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0) }
    }

    /// ".<basename>.tmp."
    private static func prefix(for basename: String) -> String { ".\(basename).tmp." }
}
