import CredentialVault
import VaultCrypto

/// The flat JSON objects of string values that docker's credential helpers exchange
/// (`{"ServerURL":"…","Username":"…","Secret":"…"}`), read and written without ever putting
/// a secret value into a `String`.
enum CredentialJSON {
    /// The error for input that is not such an object.
    static func malformed(_ why: String) -> VaultError {
        VaultError(.invalidInput, "the input is not a JSON object of strings (\(why))")
    }

    /// Parses one object whose values are strings; values of `secretKeys` stay in `SecureBytes`.
    /// - Throws: `.invalidInput` for anything else.
    static func parseObject(_ input: SecureBytes, secretKeys: Set<String>) throws -> CredentialFields {
        try input.withUnsafeBytes { raw in
            var parser = Parser(raw: raw)
            var fields = CredentialFields()
            parser.skipSpace()
            try parser.expect(UInt8(ascii: "{"))
            parser.skipSpace()
            if parser.peek() == UInt8(ascii: "}") {
                parser.index += 1
            } else {
                while true {
                    parser.skipSpace()
                    var keyBytes = try parser.string()
                    let key = String(decoding: keyBytes, as: UTF8.self)
                    SecureWipe.wipe(&keyBytes)
                    parser.skipSpace()
                    try parser.expect(UInt8(ascii: ":"))
                    parser.skipSpace()
                    var value = try parser.string()
                    if secretKeys.contains(key) {
                        fields.secrets[key] = SecureBytes(copying: value)
                    } else {
                        fields.text[key] = String(decoding: value, as: UTF8.self)
                    }
                    SecureWipe.wipe(&value)
                    parser.skipSpace()
                    if parser.peek() == UInt8(ascii: ",") { parser.index += 1; continue }
                    try parser.expect(UInt8(ascii: "}"))
                    break
                }
            }
            parser.skipSpace()
            guard parser.index == raw.count else { throw malformed("text after the object") }
            return fields
        }
    }

    /// `{"key":"value",…}` in the given order, in zeroising memory.
    static func object(_ pairs: [(key: String, value: SecureBytes)]) -> SecureBytes {
        var bytes: [UInt8] = [UInt8(ascii: "{")]
        for (index, pair) in pairs.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            appendString(Array(pair.key.utf8), to: &bytes)
            bytes.append(UInt8(ascii: ":"))
            pair.value.withUnsafeBytes { appendString($0, to: &bytes) }
        }
        bytes.append(UInt8(ascii: "}"))
        defer { SecureWipe.wipe(&bytes) }
        return SecureBytes(copying: bytes)
    }

    /// Appends `value` as a JSON string: quote, backslash and control bytes escaped.
    static func appendString(_ value: some Collection<UInt8>, to bytes: inout [UInt8]) {
        let hex = Array("0123456789abcdef".utf8)
        bytes.append(UInt8(ascii: "\""))
        for byte in value {
            switch byte {
            case UInt8(ascii: "\""): bytes += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
            case UInt8(ascii: "\\"): bytes += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
            case 0x0A: bytes += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
            case 0x00..<0x20, 0x7F:
                bytes += Array("\\u00".utf8) + [hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    private struct Parser {
        let raw: UnsafeRawBufferPointer
        var index = 0

        func peek() -> UInt8? { index < raw.count ? raw[index] : nil }

        mutating func skipSpace() {
            while let byte = peek(), [0x20, 0x09, 0x0A, 0x0D].contains(byte) { index += 1 }
        }

        mutating func expect(_ byte: UInt8) throws {
            guard peek() == byte else { throw malformed("expected '\(Character(Unicode.Scalar(byte)))'") }
            index += 1
        }

        /// A JSON string's bytes, escapes decoded (UTF-8).
        mutating func string() throws -> [UInt8] {
            try expect(UInt8(ascii: "\""))
            var result: [UInt8] = []
            while true {
                guard let byte = peek() else { throw malformed("unterminated string") }
                index += 1
                switch byte {
                case UInt8(ascii: "\""): return result
                case 0x00..<0x20: throw malformed("a control character inside a string")
                case UInt8(ascii: "\\"):
                    guard let escape = peek() else { throw malformed("unterminated escape") }
                    index += 1
                    switch escape {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): result.append(escape)
                    case UInt8(ascii: "b"): result.append(0x08)
                    case UInt8(ascii: "f"): result.append(0x0C)
                    case UInt8(ascii: "n"): result.append(0x0A)
                    case UInt8(ascii: "r"): result.append(0x0D)
                    case UInt8(ascii: "t"): result.append(0x09)
                    case UInt8(ascii: "u"):
                        var scalar = try hexQuad()
                        if (0xD800..<0xDC00).contains(scalar) {
                            try expect(UInt8(ascii: "\\"))
                            try expect(UInt8(ascii: "u"))
                            let low = try hexQuad()
                            guard (0xDC00..<0xE000).contains(low) else { throw malformed("a broken surrogate pair") }
                            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                        }
                        guard let unicode = Unicode.Scalar(scalar) else { throw malformed("a lone surrogate") }
                        result += Array(String(Character(unicode)).utf8)
                    default: throw malformed("an unknown escape")
                    }
                default: result.append(byte)
                }
            }
        }

        private mutating func hexQuad() throws -> UInt32 {
            guard index + 4 <= raw.count,
                  let value = UInt32(String(decoding: UnsafeRawBufferPointer(rebasing: raw[index..<(index + 4)]), as: UTF8.self), radix: 16)
            else { throw malformed("a bad \\u escape") }
            index += 4
            return value
        }
    }
}
