import CredentialVault

/// `key=value` lines, the format of git's credential protocol and of the secrets the
/// credential helpers store: values never contain a newline or NUL.
///
/// Secret values stay in zeroising memory (`SecureBytes`); the others become `String`s.
struct CredentialFields: Sendable {
    /// Values that are not secret (protocol, host, username, …), by key; the last one wins.
    var text: [String: String] = [:]
    /// Secret values (password, tokens), by key.
    var secrets: [String: SecureBytes] = [:]

    /// Parses lines up to a blank line or the end. Lines without `=` are ignored, like
    /// unknown keys, which callers simply never look up.
    /// - Parameters:
    ///   - bytes: the input.
    ///   - secretKeys: keys whose values are kept as `SecureBytes`.
    ///   - storedRecord: the bytes are a record `encoded(order:)` wrote (lines end in LF only, and a
    ///     value's own trailing CR is kept); otherwise protocol input, where CRLF ends a line too.
    static func parse(_ bytes: SecureBytes, secretKeys: Set<String>, storedRecord: Bool = false) -> CredentialFields {
        var fields = CredentialFields()
        bytes.withUnsafeBytes { raw in
            var start = 0
            while start < raw.count {
                var end = start
                while end < raw.count, raw[end] != 0x0A { end += 1 }
                var lineEnd = end
                if !storedRecord, lineEnd > start, raw[lineEnd - 1] == 0x0D { lineEnd -= 1 }
                if lineEnd == start { break }
                if let equals = (start..<lineEnd).first(where: { raw[$0] == UInt8(ascii: "=") }) {
                    let key = String(decoding: UnsafeRawBufferPointer(rebasing: raw[start..<equals]), as: UTF8.self)
                    let value = UnsafeRawBufferPointer(rebasing: raw[(equals + 1)..<lineEnd])
                    if secretKeys.contains(key) {
                        fields.secrets[key] = SecureBytes(copying: value)
                    } else {
                        fields.text[key] = String(decoding: value, as: UTF8.self)
                    }
                }
                start = end + 1
            }
        }
        return fields
    }

    /// The fields as lines, text ones in `order` first then the secrets in `order`, in
    /// zeroising memory (it holds secrets).
    /// - Throws: `.invalidInput` when a value holds a newline or NUL.
    func encoded(order: [String]) throws -> SecureBytes {
        var pieces: [(key: String, value: SecureBytes)] = []
        for key in order {
            if let value = text[key] { pieces.append((key, SecureBytes(copying: Array(value.utf8)))) }
            if let value = secrets[key] { pieces.append((key, value)) }
        }
        for piece in pieces {
            let bad = piece.value.withUnsafeBytes { $0.contains(0x0A) || $0.contains(0x00) }
            if bad || piece.key.utf8.contains(0x0A) {
                throw VaultError(.invalidInput, "the credential's '\(TerminalText.escaped(piece.key))' holds a newline or NUL byte, which the protocol cannot carry")
            }
        }
        let total = pieces.reduce(0) { $0 + $1.key.utf8.count + 1 + $1.value.count + 1 }
        return SecureBytes(count: total) { destination in
            var offset = 0
            for piece in pieces {
                for byte in piece.key.utf8 { destination[offset] = byte; offset += 1 }
                destination[offset] = UInt8(ascii: "="); offset += 1
                piece.value.withUnsafeBytes { value in
                    UnsafeMutableRawBufferPointer(rebasing: destination[offset..<(offset + value.count)]).copyMemory(from: value)
                }
                offset += piece.value.count
                destination[offset] = 0x0A; offset += 1
            }
        }
    }
}
