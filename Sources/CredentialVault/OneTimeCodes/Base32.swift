import VaultCrypto

/// RFC 4648 base32 (`A`–`Z`, `2`–`7`), as otpauth URIs carry TOTP seeds.
package enum Base32 {
    /// Decodes base32 text into zeroising memory: letters in either case, `=` padding optional
    /// (only at the end). Nil when a character is outside the alphabet, padding sits in the middle,
    /// or the length cannot come from whole bytes (1, 3 or 6 characters past a multiple of 8).
    package static func decode(_ text: UnsafeRawBufferPointer) -> SecureBytes? {
        var length = text.count
        while length > 0, text[length - 1] == UInt8(ascii: "=") { length -= 1 }
        let remainder = length % 8
        guard remainder != 1, remainder != 3, remainder != 6 else { return nil }
        let byteCount = length * 5 / 8
        var valid = true
        let decoded = SecureBytes(count: byteCount) { out in
            var buffer: UInt64 = 0
            var bits = 0
            var written = 0
            for index in 0..<length {
                guard let value = value(of: text[index]) else {
                    valid = false
                    return
                }
                buffer = (buffer << 5 | UInt64(value)) & 0xffff
                bits += 5
                if bits >= 8 {
                    bits -= 8
                    if written < byteCount { out[written] = UInt8(truncatingIfNeeded: buffer >> UInt64(bits)) }
                    written += 1
                }
            }
            buffer = 0
        }
        return valid ? decoded : nil
    }

    /// Encodes `bytes` as upper-case base32 without padding, in zeroising memory.
    package static func encode(_ bytes: SecureBytes) -> SecureBytes {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567".utf8)
        let count = (bytes.count * 8 + 4) / 5
        return bytes.withUnsafeBytes { input in
            SecureBytes(count: count) { out in
                var buffer: UInt64 = 0
                var bits = 0
                var written = 0
                for byte in input {
                    buffer = (buffer << 8 | UInt64(byte)) & 0xffff
                    bits += 8
                    while bits >= 5 {
                        bits -= 5
                        out[written] = alphabet[Int((buffer >> UInt64(bits)) & 0x1f)]
                        written += 1
                    }
                }
                if bits > 0 {
                    out[written] = alphabet[Int((buffer << UInt64(5 - bits)) & 0x1f)]
                }
                buffer = 0
            }
        }
    }

    private static func value(of character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): character - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): character - UInt8(ascii: "a")
        case UInt8(ascii: "2")...UInt8(ascii: "7"): character - UInt8(ascii: "2") + 26
        default: nil
        }
    }
}
