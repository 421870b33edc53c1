/// `%XX` escapes, as references (`vault://a%2Fb`) and pinentry's Assuan answers write them.
extension Collection<UInt8> {
    /// The bytes with every `%XX` decoded exactly once; nil when a `%` is not followed by two hex digits.
    /// The caller wipes the result when it holds a secret.
    package func percentDecoded() -> [UInt8]? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count)
        var iterator = makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(Self.hexValue), let low = iterator.next().flatMap(Self.hexValue) else {
                return nil
            }
            bytes.append(high << 4 | low)
        }
        return bytes
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
