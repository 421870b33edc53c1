/// Lower-case hexadecimal for ids and journal numbers (not secrets).
extension Sequence<UInt8> {
    /// "0a1b…": two lower-case hex digits per byte.
    package var hexString: String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(underestimatedCount * 2)
        for byte in self {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
