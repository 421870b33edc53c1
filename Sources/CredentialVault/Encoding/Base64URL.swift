/// Base64url without padding (RFC 4648 §5, as JWS uses it per RFC 7515 §2), on bytes.
package enum Base64URL {
    /// The 6-bit value of an alphabet byte, or nil for anything else ("=", "+", "/", spaces).
    static func sextet(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): byte - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): byte - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0") + 52
        case UInt8(ascii: "-"): 62
        case UInt8(ascii: "_"): 63
        default: nil
        }
    }

    /// Whether `encoded` could be unpadded base64url: alphabet only, length not 1 mod 4.
    static func isWellFormed(_ encoded: UnsafeRawBufferPointer) -> Bool {
        encoded.count % 4 != 1 && encoded.allSatisfy { sextet($0) != nil }
    }

    /// Decodes unpadded base64url; nil when `encoded` holds padding, a byte outside the
    /// alphabet, or has a length that is 1 mod 4. Leftover bits in the last character are
    /// ignored, as most JWT libraries do.
    package static func decode(_ encoded: UnsafeRawBufferPointer) -> [UInt8]? {
        guard encoded.count % 4 != 1 else { return nil }
        var output: [UInt8] = []
        output.reserveCapacity(encoded.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bitCount = 0
        for byte in encoded {
            guard let value = sextet(byte) else { return nil }
            accumulator = accumulator << 6 | UInt32(value)
            bitCount += 6
            if bitCount >= 8 {
                bitCount -= 8
                output.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bitCount)))
                accumulator &= (1 << UInt32(bitCount)) - 1
            }
        }
        return output
    }

    /// Encodes `bytes` as unpadded base64url.
    package static func encode(_ bytes: some Sequence<UInt8>) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        var output: [UInt8] = []
        var accumulator: UInt32 = 0
        var bitCount = 0
        for byte in bytes {
            accumulator = accumulator << 8 | UInt32(byte)
            bitCount += 8
            while bitCount >= 6 {
                bitCount -= 6
                output.append(alphabet[Int((accumulator >> UInt32(bitCount)) & 0x3F)])
            }
            accumulator &= (1 << UInt32(bitCount)) - 1
        }
        if bitCount > 0 { output.append(alphabet[Int((accumulator << UInt32(6 - bitCount)) & 0x3F)]) }
        return String(decoding: output, as: UTF8.self)
    }
}
