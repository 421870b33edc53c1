#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CredentialVault

/// Reads and writes on the standard descriptors with `read(2)` / `write(2)`, every result checked.
///
/// Foundation's `FileHandle.write` traps on `EPIPE` and `ENOSPC`; `print` ignores errors.
/// Both would turn "standard output is full or closed" into a crash or a false success.
enum StandardIO {
    static let input: Int32 = 0
    static let output: Int32 = 1
    static let error: Int32 = 2

    /// Whether `descriptor` is a terminal. The corresponding C function is `isatty`.
    static func isTerminal(_ descriptor: Int32) -> Bool {
        isatty(descriptor) == 1
    }

    /// Writes every byte to `descriptor`, retrying short writes and `EINTR`.
    /// - Parameters:
    ///   - bytes: what to write.
    ///   - descriptor: an open file descriptor.
    ///   - name: names the destination in the error, e.g. "standard output".
    /// - Throws: `VaultError` `.io` with the system's reason (`EPIPE`, `ENOSPC`, `EBADF`, …).
    static func writeAll(_ bytes: UnsafeRawBufferPointer, to descriptor: Int32, name: String) throws {
        guard let base = bytes.baseAddress else { return }
        var offset = 0
        while offset < bytes.count {
            let written = write(descriptor, base + offset, bytes.count - offset)
            if written < 0 {
                let code = errno
                if code == EINTR { continue }
                throw VaultError.io("writing to \(name)", path: nil, errno: code)
            }
            guard written > 0 else { throw VaultError.io("writing to \(name)", path: nil, errno: EIO) }
            offset += written
        }
    }

    /// Writes `text` to standard output.
    ///
    /// The last line of defence against terminal injection: whatever a caller forgot to
    /// escape, no control character but "\n", no C1, bidi or invisible format character
    /// reaches the terminal (`TerminalText`). Untrusted fields are escaped where they are
    /// laid out, newlines included; this keeps the program's own line breaks.
    /// - Throws: `VaultError` `.io` when standard output is closed or full.
    static func printOutput(_ text: String) throws {
        var text = TerminalText.escaped(text, keepingLineBreaks: true)
        try text.withUTF8 { try writeAll(UnsafeRawBufferPointer($0), to: output, name: "standard output") }
    }

    /// Writes `bytes` (text that is not secret, already safe: JSON from `JSONWriter`, which
    /// escapes controls, C1, bidi and format characters) to standard output.
    /// - Throws: `VaultError` `.io` when standard output is closed or full.
    static func printOutput(bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { try writeAll($0, to: output, name: "standard output") }
    }

    /// Writes `secret` to standard output, exactly, with nothing added.
    /// - Throws: `VaultError` `.io` when standard output is closed or full.
    static func printOutput(_ secret: SecureBytes) throws {
        try secret.withUnsafeBytes { try writeAll($0, to: output, name: "standard output") }
    }

    /// Writes `text` to standard error; failures are ignored, there is nowhere left to report them.
    static func printError(_ text: String) {
        var text = TerminalText.escaped(text, keepingLineBreaks: true)
        text.withUTF8 { try? writeAll(UnsafeRawBufferPointer($0), to: error, name: "standard error") }
    }

    /// Reads `descriptor` to end of file into zeroising memory.
    ///
    /// Every byte is kept: NUL bytes, invalid UTF-8, a trailing newline.
    /// - Parameters:
    ///   - descriptor: the descriptor to drain (standard input).
    ///   - limit: the most bytes accepted.
    ///   - name: names the source in errors.
    /// - Returns: the bytes read.
    /// - Throws: `.invalidInput` when more than `limit` bytes arrive; `.io` on a read error.
    static func readAll(from descriptor: Int32, limit: Int, name: String) throws -> SecureBytes {
        var total = 0
        // One byte more than the limit tells "exactly the limit" from "too much".
        let buffer = try SecureBytes(count: limit + 1) { raw in
            guard let base = raw.baseAddress else { return }
            while total < raw.count {
                let count = read(descriptor, base + total, raw.count - total)
                if count < 0 {
                    let code = errno
                    if code == EINTR { continue }
                    throw VaultError.io("reading \(name)", path: nil, errno: code)
                }
                if count == 0 { break }
                total += count
            }
        }
        guard total <= limit else {
            throw VaultError(.invalidInput, "\(name) holds more than \(limit) bytes, the largest secret the vault keeps",
                             fix: "store large files elsewhere and keep only their key in the vault")
        }
        return buffer.slice(0..<total)
    }
}
