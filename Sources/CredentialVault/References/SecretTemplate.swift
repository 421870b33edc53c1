import VaultCrypto

/// A template with `{{ vault://… }}` placeholders, for `vault inject`.
///
/// A placeholder is `{{`, optional spaces or tabs, a reference (`SecretReference`), optional spaces
/// or tabs, `}}`, on one line. Every other `{{` (Go, Helm, Mustache) passes through untouched, and so
/// does every byte outside placeholders: a template need not be UTF-8.
package struct SecretTemplate: Sendable {
    /// One placeholder: where it is and what it names.
    package struct Placeholder: Sendable, Equatable {
        /// The bytes `{{ … }}` it takes up in the template.
        package let range: Range<Int>
        /// The entry it names.
        package let reference: SecretReference
        /// Its line, from 1.
        package let line: Int
    }

    /// The template's bytes.
    package let bytes: [UInt8]
    /// Its placeholders, in order.
    package let placeholders: [Placeholder]

    /// Finds the placeholders of `bytes`.
    /// - Throws: `VaultError` `.invalidInput` for a `{{ vault://` that is not closed on its line or
    ///   whose reference is not valid (the message names the line).
    package init(_ bytes: [UInt8], path: String) throws {
        self.bytes = bytes
        var placeholders: [Placeholder] = []
        var index = 0, line = 1
        let open = Array("{{".utf8), close = Array("}}".utf8), scheme = Array(SecretReference.prefix.utf8)
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "\n") { line += 1 }
            guard bytes[index...].starts(with: open) else {
                index += 1
                continue
            }
            var start = index + open.count
            while start < bytes.count, Self.isBlank(bytes[start]) { start += 1 }
            guard bytes[start...].starts(with: scheme) else {
                index += 1
                continue
            }
            var end = start
            while end < bytes.count, !bytes[end...].starts(with: close), bytes[end] != UInt8(ascii: "\n") { end += 1 }
            guard end < bytes.count, bytes[end...].starts(with: close) else {
                throw VaultError(.invalidInput, "\(TerminalText.escaped(path)), line \(line): a {{ vault://… placeholder is not closed with }} on its line",
                                 fix: "close it, or write a '}' of the name as %7D")
            }
            var referenceEnd = end
            while referenceEnd > start, Self.isBlank(bytes[referenceEnd - 1]) { referenceEnd -= 1 }
            guard let text = String(validating: bytes[start..<referenceEnd], as: UTF8.self) else {
                throw VaultError(.invalidInput, "\(TerminalText.escaped(path)), line \(line): the placeholder's reference is not UTF-8")
            }
            let reference: SecretReference
            do {
                guard let parsed = try SecretReference.parse(text) else { throw VaultError(.invalidInput, "not a reference") }
                reference = parsed
            } catch let error as VaultError {
                throw VaultError(.invalidInput, "\(TerminalText.escaped(path)), line \(line): \(error.message)", fix: error.fix)
            }
            placeholders.append(Placeholder(range: index..<(end + close.count), reference: reference, line: line))
            index = end + close.count
        }
        self.placeholders = placeholders
    }

    /// The template with every placeholder replaced by its secret, in zeroising memory.
    /// - Parameter secrets: the secret of every placeholder's reference.
    /// - Throws: `VaultError` `.notFound` when `secrets` lacks a reference.
    package func rendered(with secrets: [SecretReference: SecureBytes]) throws -> SecureBytes {
        var size = bytes.count
        for placeholder in placeholders {
            guard let secret = secrets[placeholder.reference] else {
                throw VaultError(.notFound, "no secret for \(TerminalText.escaped(placeholder.reference.description))")
            }
            size += secret.count - placeholder.range.count
        }
        return SecureBytes(count: size) { output in
            var written = 0, copied = 0
            func copy(_ source: UnsafeRawBufferPointer) {
                guard let base = source.baseAddress, let target = output.baseAddress, source.count > 0 else { return }
                (target + written).copyMemory(from: base, byteCount: source.count)
                written += source.count
            }
            bytes.withUnsafeBytes { template in
                for placeholder in placeholders {
                    copy(UnsafeRawBufferPointer(rebasing: template[copied..<placeholder.range.lowerBound]))
                    secrets[placeholder.reference]?.withUnsafeBytes { copy($0) }
                    copied = placeholder.range.upperBound
                }
                copy(UnsafeRawBufferPointer(rebasing: template[copied...]))
            }
        }
    }

    private static func isBlank(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t")
    }
}
