/// A `.env` file read with python-dotenv's syntax, the one most projects' `.env` files are written for.
///
/// `#` comments; an optional `export ` prefix; a key unquoted (no `=`, `#` or whitespace) or in single
/// quotes; single-quoted values (only `\'` and `\\` are escapes, as python-dotenv decodes them);
/// double-quoted values with `\n`, `\t`, `\"`, `\\` (and `\a \b \f \r \v \'`) escapes; quoted values
/// may span lines; unquoted values are trimmed and end at a whitespace-preceded `#`; CRLF and CR line
/// ends and a UTF-8 byte-order mark are accepted. `${VAR}` is left as written (no interpolation). A key
/// without `=` has no value. Where python-dotenv skips a line it cannot parse (with a warning), this
/// parser refuses the file, naming the line: a secret that silently goes missing is worse.
package struct DotEnvFile: Sendable {
    /// One `KEY=value` statement.
    package struct Binding: Sendable, Equatable {
        /// The variable's name.
        package let key: String
        /// Its value; `nil` for a bare `KEY` line.
        package let value: String?
        /// The line it starts on, from 1.
        package let line: Int
    }

    /// Every statement, in file order (a key set twice appears twice).
    package let bindings: [Binding]

    /// Each key once, in the order it first appears, with the value of its last statement (as
    /// python-dotenv's `dotenv_values`).
    package var values: [Binding] {
        // Keyed by bytes: Swift's String equality would merge an NFC and an NFD key, python's does not.
        var order: [[UInt8]] = [], last: [[UInt8]: Binding] = [:]
        for binding in bindings {
            let key = Array(binding.key.utf8)
            if last[key] == nil { order.append(key) }
            last[key] = binding
        }
        return order.compactMap { last[$0] }
    }

    /// Parses the bytes of a file.
    /// - Parameters:
    ///   - bytes: the file's contents.
    ///   - path: the file's name, for messages.
    /// - Throws: `VaultError` `.invalidInput` for text that is not UTF-8 or a line that is not a
    ///   statement (the message names the line, never its contents).
    package init(parsing bytes: some Collection<UInt8>, path: String) throws {
        var content = Array(bytes)
        if content.starts(with: [0xEF, 0xBB, 0xBF]) { content.removeFirst(3) }
        guard let text = String(validating: content, as: UTF8.self) else {
            throw VaultError(.invalidInput, "\(TerminalText.escaped(path)) is not UTF-8 text", fix: "save it as UTF-8")
        }
        // Python reads the file with universal newlines: CRLF and a lone CR become LF before
        // python-dotenv sees the text (so a multi-line quoted value holds LF, whatever the file used).
        var scalars: [Unicode.Scalar] = []
        scalars.reserveCapacity(content.count)
        var afterCR = false
        for scalar in text.unicodeScalars {
            if scalar == "\n", afterCR {
                afterCR = false
                continue
            }
            afterCR = scalar == "\r"
            scalars.append(afterCR ? "\n" : scalar)
        }
        var reader = Reader(scalars: scalars)
        var bindings: [Binding] = []
        while let statement = try reader.nextStatement() {
            guard let binding = statement else { continue }
            bindings.append(binding)
        }
        if let line = reader.firstErrorLine {
            throw VaultError(.invalidInput, "\(TerminalText.escaped(path)), line \(line): not a KEY=value statement python-dotenv can read",
                             fix: "fix that line (quotes closed, nothing after a closing quote but a # comment)")
        }
        self.bindings = bindings
    }
}

/// python-dotenv's parser (`dotenv/parser.py`), step for step, over Unicode scalars.
private struct Reader {
    let scalars: [Unicode.Scalar]
    var position = 0
    var line = 1
    var firstErrorLine: Int?

    init(scalars: [Unicode.Scalar]) { self.scalars = scalars }

    private struct Failure: Error {}

    /// The next statement: `nil` at the end or at a bad statement (`firstErrorLine` tells), `.some(nil)` for a comment.
    mutating func nextStatement() throws -> Binding?? {
        skip { Self.isWhitespace($0) }
        guard position < scalars.count else { return nil }
        let startLine = line
        do {
            return .some(try binding(startLine: startLine))
        } catch {
            // The file is refused as a whole, so reading stops at the first bad statement.
            firstErrorLine = startLine
            position = scalars.count
            return nil
        }
    }

    typealias Binding = DotEnvFile.Binding

    private mutating func binding(startLine: Int) throws -> Binding? {
        readExport()
        guard let key = try readKey() else {
            try readCommentAndEndOfLine()
            return nil
        }
        skip(Self.isInlineWhitespace)
        var value: String?
        if peek == "=" {
            advance(over: 1)
            skip(Self.isInlineWhitespace)
            value = try readValue()
        }
        try readCommentAndEndOfLine()
        return Binding(key: key, value: value, line: startLine)
    }

    private var peek: Unicode.Scalar? { position < scalars.count ? scalars[position] : nil }

    /// `(?:export[^\S\r\n]+)?`
    private mutating func readExport() {
        let word: [Unicode.Scalar] = ["e", "x", "p", "o", "r", "t"]
        guard scalars[position...].starts(with: word) else { return }
        var end = position + word.count
        while end < scalars.count, Self.isInlineWhitespace(scalars[end]) { end += 1 }
        if end > position + word.count { position = end }
    }

    /// `#` → no key; `'([^']+)'`; or `([^=\#\s]+)`.
    private mutating func readKey() throws -> String? {
        switch peek {
        case "#":
            return nil
        case "'":
            var end = position + 1
            while end < scalars.count, scalars[end] != "'" { end += 1 }
            guard end < scalars.count, end > position + 1 else { throw Failure() }
            let key = string(position + 1..<end)
            advance(over: end + 1 - position)
            return key
        default:
            var end = position
            while end < scalars.count, scalars[end] != "=", scalars[end] != "#", !Self.isWhitespace(scalars[end]) { end += 1 }
            guard end > position else { throw Failure() }
            let key = string(position..<end)
            advance(over: end - position)
            return key
        }
    }

    private mutating func readValue() throws -> String {
        switch peek {
        case "'":
            return Self.decode(try readQuoted("'"), escapes: ["\\": "\\", "'": "'"])
        case "\"":
            return Self.decode(try readQuoted("\""), escapes: ["\\": "\\", "'": "'", "\"": "\"", "a": "\u{07}", "b": "\u{08}",
                                                               "f": "\u{0C}", "n": "\n", "r": "\r", "t": "\t", "v": "\u{0B}"])
        case nil, "\n", "\r":
            return ""
        default:
            var end = position
            while end < scalars.count, scalars[end] != "\r", scalars[end] != "\n" { end += 1 }
            var part = Array(scalars[position..<end])
            advance(over: end - position)
            // re.sub(r"\s+#.*", "", part): cut at the first whitespace run followed by '#'.
            var index = 0
            while index < part.count {
                if Self.isWhitespace(part[index]) {
                    var after = index
                    while after < part.count, Self.isWhitespace(part[after]) { after += 1 }
                    if after < part.count, part[after] == "#" {
                        part.removeSubrange(index...)
                        break
                    }
                    index = after
                } else {
                    index += 1
                }
            }
            while let last = part.last, Self.isWhitespace(last) { part.removeLast() }
            return String(String.UnicodeScalarView(part))
        }
    }

    /// `Q((?:\\Q|[^Q])*)Q` with the regex engine's backtracking: the greedy scan takes `\Q` as a
    /// pair; when no closing quote follows, the last pair's quote closes the value instead.
    private mutating func readQuoted(_ quote: Unicode.Scalar) throws -> [Unicode.Scalar] {
        var index = position + 1
        var lastPairQuote: Int?
        while index < scalars.count {
            if scalars[index] == "\\", index + 1 < scalars.count, scalars[index + 1] == quote {
                lastPairQuote = index + 1
                index += 2
            } else if scalars[index] == quote {
                break
            } else {
                index += 1
            }
        }
        if index >= scalars.count {
            guard let pairQuote = lastPairQuote else { throw Failure() }
            index = pairQuote
        }
        let content = Array(scalars[(position + 1)..<index])
        advance(over: index + 1 - position)
        return content
    }

    /// `(?:[^\S\r\n]*#[^\r\n]*)?` then `[^\S\r\n]*(?:\r\n|\n|\r|$)`.
    private mutating func readCommentAndEndOfLine() throws {
        var index = position
        while index < scalars.count, Self.isInlineWhitespace(scalars[index]) { index += 1 }
        if index < scalars.count, scalars[index] == "#" {
            while index < scalars.count, scalars[index] != "\r", scalars[index] != "\n" { index += 1 }
            advance(over: index - position)
        }
        skip(Self.isInlineWhitespace)
        guard let next = peek else { return }
        guard next == "\r" || next == "\n" else { throw Failure() }
        let length = next == "\r" && position + 1 < scalars.count && scalars[position + 1] == "\n" ? 2 : 1
        advance(over: length)
    }

    private static func decode(_ content: [Unicode.Scalar], escapes: [Unicode.Scalar: Unicode.Scalar]) -> String {
        var result = String.UnicodeScalarView()
        var index = 0
        while index < content.count {
            if content[index] == "\\", index + 1 < content.count, let decoded = escapes[content[index + 1]] {
                result.append(decoded)
                index += 2
            } else {
                result.append(content[index])
                index += 1
            }
        }
        return String(result)
    }

    private func string(_ range: Range<Int>) -> String {
        String(String.UnicodeScalarView(scalars[range]))
    }

    private mutating func skip(_ predicate: (Unicode.Scalar) -> Bool) {
        var end = position
        while end < scalars.count, predicate(scalars[end]) { end += 1 }
        advance(over: end - position)
    }

    /// Moves on by `count` scalars, counting line ends as python-dotenv does (`\r\n`, `\n`, `\r`).
    private mutating func advance(over count: Int) {
        let end = min(position + count, scalars.count)
        var index = position
        while index < end {
            if scalars[index] == "\r" {
                line += 1
                if index + 1 < end, scalars[index + 1] == "\n" { index += 1 }
            } else if scalars[index] == "\n" {
                line += 1
            }
            index += 1
        }
        position = end
    }

    /// Python's `str.isspace()`, which its regular expressions' `\s` follows.
    static func isWhitespace(_ scalar: Unicode.Scalar) -> Bool {
        scalar.properties.isWhitespace || (0x1C...0x1F).contains(scalar.value)
    }

    /// `[^\S\r\n]`: whitespace that does not end a line.
    static func isInlineWhitespace(_ scalar: Unicode.Scalar) -> Bool {
        scalar != "\r" && scalar != "\n" && isWhitespace(scalar)
    }
}
