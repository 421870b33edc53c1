/// The strings of the index and of the history section: a big-endian UInt16 byte count, then
/// that many bytes of UTF-8 (docs/FORMAT.md). One reader and one writer for both codecs.
extension ByteReader {
    /// Reads a length-prefixed string, strictly.
    /// - Parameters:
    ///   - cap: the most bytes it may have.
    ///   - allowEmpty: whether zero bytes is valid.
    ///   - what: its name in the error ("owner", "label", "attribute value").
    ///   - corrupt: makes the codec's error for a message.
    /// - Returns: the string, whose UTF-8 is exactly the bytes read.
    /// - Throws: `corrupt` when the length is out of range or the bytes are not valid UTF-8;
    ///   `.corrupt` when the region ends early.
    mutating func readLengthPrefixedString(cap: Int, allowEmpty: Bool, what: String,
                                           _ corrupt: (String) -> VaultError) throws -> String {
        let length = Int(try readUInt16())
        guard length <= cap, allowEmpty || length > 0 else { throw corrupt("\(what) length \(length) out of range") }
        let bytes = try readBytes(length)
        // Decoding repairs invalid UTF-8 with U+FFFD, so the bytes round-trip exactly only when
        // they were valid. (Faster than String(validating:as:), which is not specialised here.)
        let string = String(decoding: bytes, as: UTF8.self)
        guard string.utf8.elementsEqual(bytes) else { throw corrupt("\(what) is not valid UTF-8") }
        return string
    }
}

extension ByteWriter {
    /// Appends `text` as `ByteReader.readLengthPrefixedString` reads it (the caller keeps it
    /// within its cap, which is below 65536 bytes).
    mutating func appendLengthPrefixed(_ text: String) {
        append(UInt16(text.utf8.count))
        append(contentsOf: text.utf8)
    }
}
