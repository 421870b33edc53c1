import CredentialVault

/// The secret of a docker credential's entry (`docker:SERVERURL`): `username=` and `secret=` lines
/// (`CredentialFields`). docker's JSON can carry a line feed or a NUL in the user name or the
/// secret, which such a line cannot; a record holding one is written percent-encoded instead,
/// after a first line `encoding=percent` (`%` as `%25`, LF as `%0A`, NUL as `%00`), so every value
/// comes back exactly. Other records are written as before, and a record without that line (every
/// record an earlier version wrote: none could hold LF or NUL) is read as it stands.
enum DockerCredentialRecord {
    private static let marker = "encoding"
    private static let percent = "percent"

    /// The record for `username` and `secret`, in zeroising memory.
    static func encoded(username: String, secret: SecureBytes) throws -> SecureBytes {
        var fields = CredentialFields()
        let needsEncoding = username.utf8.contains { $0 == 0x0A || $0 == 0 } || secret.withUnsafeBytes { $0.contains(0x0A) || $0.contains(0) }
        if needsEncoding {
            fields.text[marker] = percent
            fields.text["username"] = String(decoding: percentEncoded(Array(username.utf8)).withUnsafeBytes { Array($0) }, as: UTF8.self)
            fields.secrets["secret"] = secret.withUnsafeBytes { percentEncoded($0) }
        } else {
            fields.text["username"] = username
            fields.secrets["secret"] = secret
        }
        return try fields.encoded(order: [marker, "username", "secret"])
    }

    /// The user name and secret of a stored record.
    static func decoded(_ record: SecureBytes) -> (username: String, secret: SecureBytes) {
        let fields = CredentialFields.parse(record, secretKeys: ["secret"], storedRecord: true)
        let username = fields.text["username"] ?? "", secret = fields.secrets["secret"] ?? .empty
        guard fields.text[marker] == percent else { return (username, secret) }
        let decodedName = Array(username.utf8).withUnsafeBytes { percentDecoded($0) }.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
        return (decodedName, secret.withUnsafeBytes { percentDecoded($0) })
    }

    /// `%`, LF and NUL as `%XX`; every other byte as it is.
    private static func percentEncoded(_ bytes: some Collection<UInt8>) -> SecureBytes {
        let hex = Array("0123456789ABCDEF".utf8)
        let escaped: (UInt8) -> Bool = { $0 == UInt8(ascii: "%") || $0 == 0x0A || $0 == 0 }
        let count = bytes.reduce(0) { $0 + (escaped($1) ? 3 : 1) }
        return SecureBytes(count: count) { destination in
            var offset = 0
            for byte in bytes {
                if escaped(byte) {
                    destination[offset] = UInt8(ascii: "%")
                    destination[offset + 1] = hex[Int(byte >> 4)]
                    destination[offset + 2] = hex[Int(byte & 0x0F)]
                    offset += 3
                } else {
                    destination[offset] = byte
                    offset += 1
                }
            }
        }
    }

    /// Undoes `percentEncoded`; a `%` not followed by two hex digits stays as it is.
    private static func percentDecoded(_ source: UnsafeRawBufferPointer) -> SecureBytes {
        func digit(_ byte: UInt8) -> UInt8? {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
            case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
            case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
            default: nil
            }
        }
        /// The byte an escape at `index` stands for, or nil when there is none.
        func escape(at index: Int) -> UInt8? {
            guard source[index] == UInt8(ascii: "%"), index + 2 < source.count,
                  let high = digit(source[index + 1]), let low = digit(source[index + 2]) else { return nil }
            return high << 4 | low
        }
        var count = 0, index = 0
        while index < source.count {
            index += escape(at: index) == nil ? 1 : 3
            count += 1
        }
        return SecureBytes(count: count) { destination in
            var index = 0, offset = 0
            while index < source.count {
                if let byte = escape(at: index) {
                    destination[offset] = byte
                    index += 3
                } else {
                    destination[offset] = source[index]
                    index += 1
                }
                offset += 1
            }
        }
    }
}
