import VaultCrypto

/// Replaces secret values in a stream of output with a marker, for `vault exec --mask`.
///
/// Output arrives in pieces of any size, so a secret can be split across reads. The masker
/// passes on at once every byte that cannot be the start of a secret, and holds back only a tail
/// that is a proper prefix of one (it is released when the next bytes show it is not, or at the
/// end). A program that prints a prompt is therefore not held up unless its prompt ends like a
/// secret begins. Values shorter than `minimumLength` are not masked: they would match ordinary
/// text everywhere (the caller warns about them).
package struct SecretMasker: Sendable {
    /// The shortest value that is masked.
    package static let minimumLength = 4
    /// What a secret is replaced with.
    package static let marker = Array("<concealed by vault>".utf8)

    /// Every value to mask, longest first (a longer secret that starts with a shorter one wins).
    private let secrets: SecureBytes
    private let ranges: [Range<Int>]
    private var pending: [UInt8] = []

    /// A masker for `values`; values shorter than `minimumLength` are left out, as are duplicates.
    package init(values: [SecureBytes]) {
        var unique: [SecureBytes] = []
        for value in values where value.count >= Self.minimumLength && !unique.contains(value) { unique.append(value) }
        unique.sort { $0.count > $1.count }
        var ranges: [Range<Int>] = [], offset = 0
        for value in unique {
            ranges.append(offset..<(offset + value.count))
            offset += value.count
        }
        self.ranges = ranges
        self.secrets = unique.reduce(SecureBytes(copying: [UInt8]())) { $0.appending($1) }
    }

    /// Takes the next piece of output.
    /// - Returns: the bytes that can be written now, with every complete secret replaced.
    package mutating func feed(_ bytes: some Collection<UInt8>) -> [UInt8] {
        pending.append(contentsOf: bytes)
        return drain(final: false)
    }

    /// Ends the stream.
    /// - Returns: the rest, with the held-back tail (which never became a secret) as it was.
    package mutating func finish() -> [UInt8] {
        drain(final: true)
    }

    private mutating func drain(final: Bool) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(pending.count)
        var index = 0
        secrets.withUnsafeBytes { all in
            scanning: while index < pending.count {
                var heldBack = false
                for range in ranges where all[range.lowerBound] == pending[index] {
                    let available = pending.count - index
                    let length = range.count
                    let compared = min(available, length)
                    guard pending[index..<(index + compared)].elementsEqual(all[range.lowerBound..<(range.lowerBound + compared)]) else {
                        continue
                    }
                    if compared == length {
                        // A longer secret that may still complete here goes first: wait for it.
                        if heldBack && !final { break scanning }
                        output += Self.marker
                        index += length
                        continue scanning
                    }
                    heldBack = true
                }
                if heldBack && !final { break scanning }
                output.append(pending[index])
                index += 1
            }
        }
        // What was passed on leaves the buffer; what is held back (at most a secret's length) stays.
        let remaining = Array(pending[index...])
        SecureWipe.wipe(&pending)
        pending = remaining
        return output
    }
}
