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
        var masked: [Range<Int>] = []
        var boundary = pending.count
        secrets.withUnsafeBytes { all in
            // Every complete occurrence of every secret, merged: overlapping secrets are hidden whole
            // (a shorter secret matched first must not leave the rest of a longer one visible).
            var occurrences: [Range<Int>] = []
            for range in ranges {
                let secret = all[range]
                guard let first = secret.first, secret.count <= pending.count else { continue }
                var index = 0
                while index + secret.count <= pending.count {
                    if pending[index] == first, pending[index..<(index + secret.count)].elementsEqual(secret) {
                        occurrences.append(index..<(index + secret.count))
                    }
                    index += 1
                }
            }
            occurrences.sort { $0.lowerBound < $1.lowerBound }
            for occurrence in occurrences {
                if let last = masked.last, occurrence.lowerBound <= last.upperBound {
                    masked[masked.count - 1] = last.lowerBound..<max(last.upperBound, occurrence.upperBound)
                } else {
                    masked.append(occurrence)
                }
            }
            guard !final else { return }
            // Hold back the earliest tail that could still become a secret, and any masked stretch it touches.
            let longest = ranges.first?.count ?? 0
            guard longest > 1 else { return }
            for start in max(0, pending.count - (longest - 1))..<max(0, pending.count) {
                let tail = pending[start...]
                if ranges.contains(where: { range in tail.count < range.count && tail.elementsEqual(all[range].prefix(tail.count)) }) {
                    boundary = start
                    break
                }
            }
            for stretch in masked.reversed() where stretch.lowerBound < boundary && stretch.upperBound > boundary {
                boundary = stretch.lowerBound
            }
        }
        var output: [UInt8] = []
        output.reserveCapacity(boundary)
        var index = 0
        for stretch in masked where stretch.upperBound <= boundary {
            output += pending[index..<stretch.lowerBound]
            output += Self.marker
            index = stretch.upperBound
        }
        if index < boundary { output += pending[index..<boundary] }
        // What was passed on leaves the buffer; the held-back tail stays.
        let remaining = Array(pending[boundary...])
        SecureWipe.wipe(&pending)
        pending = remaining
        return output
    }
}
