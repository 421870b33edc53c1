import FoundationEssentials

/// Why and where a JSON text was rejected. It never quotes the text, which may hold tokens.
struct JSONSyntaxError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong, e.g. "unexpected end of input".
    let reason: String
    /// Byte offset of the problem, from 0.
    let offset: Int
    /// 1-based line of the problem.
    let line: Int
    /// 1-based column (in bytes) of the problem.
    let column: Int

    /// "unexpected end of input at line 3, column 7".
    var description: String { "\(reason) at line \(line), column \(column)" }
}

/// A strict RFC 8259 parser working directly on bytes.
///
/// Written here rather than borrowed from Foundation because `JSONDecoder` only says "The
/// given data was not valid JSON" and `JSONSerialization` accepts trailing commas and
/// repeated keys; a corrupt profile deserves a line and column, and a token response with
/// two `access_token`s deserves a rejection.
struct JSONParser {
    /// Deeper nesting is refused so hostile input cannot exhaust the stack.
    static let maximumDepth = 256

    private let input: UnsafeRawBufferPointer
    private var position = 0
    private var depth = 0

    private init(input: UnsafeRawBufferPointer) {
        self.input = input
    }

    /// Parses exactly one JSON value, with optional whitespace around it.
    /// - Throws: `JSONSyntaxError`.
    static func parse(_ bytes: some ContiguousBytes) throws(JSONSyntaxError) -> JSONValue {
        let result: Result<JSONValue, JSONSyntaxError> = bytes.withUnsafeBytes { buffer in
            Result { () throws(JSONSyntaxError) -> JSONValue in
                var parser = JSONParser(input: buffer)
                return try parser.parseDocument()
            }
        }
        return try result.get()
    }

    // MARK: Structure

    private mutating func parseDocument() throws(JSONSyntaxError) -> JSONValue {
        // A byte-order mark is not JSON, but editors add one; RFC 8259 §8.1 allows ignoring it.
        if input.count >= 3, input[0] == 0xEF, input[1] == 0xBB, input[2] == 0xBF { position = 3 }
        let value = try parseValue()
        skipWhitespace()
        guard position == input.count else { throw failure("unexpected data after the JSON value") }
        return value
    }

    private mutating func parseValue() throws(JSONSyntaxError) -> JSONValue {
        skipWhitespace()
        guard let byte = peek() else { throw failure("unexpected end of input") }
        switch byte {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectLiteral("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try parseNumber())
        default: throw failure("unexpected character")
        }
    }

    private mutating func parseObject() throws(JSONSyntaxError) -> JSONValue {
        try enterContainer()
        position += 1  // "{"
        var members: [String: JSONValue] = [:]
        skipWhitespace()
        if peek() == UInt8(ascii: "}") {
            position += 1
            depth -= 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard peek() == UInt8(ascii: "\"") else {
                throw failure(peek() == nil ? "unexpected end of input" : "expected a string key")
            }
            let keyOffset = position
            let key = try parseString()
            skipWhitespace()
            guard peek() == UInt8(ascii: ":") else {
                throw failure(peek() == nil ? "unexpected end of input" : "expected ':' after a key")
            }
            position += 1
            let value = try parseValue()
            guard members.updateValue(value, forKey: key) == nil else {
                throw failure("duplicate key \"\(Self.abbreviated(key))\"", at: keyOffset)
            }
            skipWhitespace()
            switch peek() {
            case UInt8(ascii: ","):
                position += 1
            case UInt8(ascii: "}"):
                position += 1
                depth -= 1
                return .object(members)
            case nil:
                throw failure("unexpected end of input")
            default:
                throw failure("expected ',' or '}' in an object")
            }
        }
    }

    private mutating func parseArray() throws(JSONSyntaxError) -> JSONValue {
        try enterContainer()
        position += 1  // "["
        var elements: [JSONValue] = []
        skipWhitespace()
        if peek() == UInt8(ascii: "]") {
            position += 1
            depth -= 1
            return .array(elements)
        }
        while true {
            elements.append(try parseValue())
            skipWhitespace()
            switch peek() {
            case UInt8(ascii: ","):
                position += 1
                skipWhitespace()
                if peek() == UInt8(ascii: "]") { throw failure("trailing comma in an array") }
            case UInt8(ascii: "]"):
                position += 1
                depth -= 1
                return .array(elements)
            case nil:
                throw failure("unexpected end of input")
            default:
                throw failure("expected ',' or ']' in an array")
            }
        }
    }

    private mutating func enterContainer() throws(JSONSyntaxError) {
        depth += 1
        guard depth <= Self.maximumDepth else {
            throw failure("nested more than \(Self.maximumDepth) levels deep")
        }
    }

    // MARK: Scalars

    private mutating func expectLiteral(_ literal: StaticString) throws(JSONSyntaxError) {
        let count = literal.utf8CodeUnitCount
        guard input.count - position >= count else { throw failure("unexpected end of input") }
        let matches = literal.withUTF8Buffer { expected in
            (0..<count).allSatisfy { input[position + $0] == expected[$0] }
        }
        guard matches else { throw failure("unexpected character") }
        position += count
    }

    private mutating func parseNumber() throws(JSONSyntaxError) -> Double {
        let start = position
        if peek() == UInt8(ascii: "-") { position += 1 }
        switch peek() {
        case UInt8(ascii: "0"):
            position += 1
            if let next = peek(), Self.isDigit(next) { throw failure("leading zero in a number", at: start) }
        case .some(let byte) where Self.isDigit(byte):
            skipDigits()
        case nil:
            throw failure("unexpected end of input")
        default:
            throw failure("invalid number", at: start)
        }
        if peek() == UInt8(ascii: ".") {
            position += 1
            guard let byte = peek(), Self.isDigit(byte) else { throw failure("expected a digit after '.'") }
            skipDigits()
        }
        if peek() == UInt8(ascii: "e") || peek() == UInt8(ascii: "E") {
            position += 1
            if peek() == UInt8(ascii: "+") || peek() == UInt8(ascii: "-") { position += 1 }
            guard let byte = peek(), Self.isDigit(byte) else { throw failure("expected a digit in an exponent") }
            skipDigits()
        }
        let text = String(decoding: UnsafeRawBufferPointer(rebasing: input[start..<position]), as: UTF8.self)
        guard let value = Double(text), value.isFinite else {
            throw failure("number too large to represent", at: start)
        }
        return value
    }

    private mutating func parseString() throws(JSONSyntaxError) -> String {
        let opening = position
        position += 1  // opening quote
        let start = position
        // Fast path: no escapes, so the bytes between the quotes are the string.
        while let byte = peek(), byte != UInt8(ascii: "\""), byte != UInt8(ascii: "\\"), byte >= 0x20 {
            position += 1
        }
        if peek() == UInt8(ascii: "\"") {
            let slice = UnsafeRawBufferPointer(rebasing: input[start..<position])
            position += 1
            guard let string = String(validating: slice, as: UTF8.self) else {
                throw failure("invalid UTF-8 in a string", at: opening)
            }
            return string
        }
        var buffer = Array(UnsafeRawBufferPointer(rebasing: input[start..<position]))
        while true {
            guard let byte = peek() else { throw failure("unterminated string", at: opening) }
            switch byte {
            case UInt8(ascii: "\""):
                position += 1
                guard let string = String(validating: buffer, as: UTF8.self) else {
                    throw failure("invalid UTF-8 in a string", at: opening)
                }
                return string
            case UInt8(ascii: "\\"):
                position += 1
                try parseEscape(into: &buffer)
            case 0..<0x20:
                throw failure("unescaped control character in a string")
            default:
                buffer.append(byte)
                position += 1
            }
        }
    }

    private mutating func parseEscape(into buffer: inout [UInt8]) throws(JSONSyntaxError) {
        guard let byte = peek() else { throw failure("unterminated string") }
        position += 1
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): buffer.append(byte)
        case UInt8(ascii: "b"): buffer.append(0x08)
        case UInt8(ascii: "f"): buffer.append(0x0C)
        case UInt8(ascii: "n"): buffer.append(0x0A)
        case UInt8(ascii: "r"): buffer.append(0x0D)
        case UInt8(ascii: "t"): buffer.append(0x09)
        case UInt8(ascii: "u"):
            let escapeStart = position - 2
            let unit = try parseHexQuad()
            var scalarValue = UInt32(unit)
            switch unit {
            case 0xD800...0xDBFF:
                guard peek() == UInt8(ascii: "\\"), position + 1 < input.count,
                      input[position + 1] == UInt8(ascii: "u") else {
                    throw failure("unpaired surrogate in a \\u escape", at: escapeStart)
                }
                position += 2
                let low = try parseHexQuad()
                guard (0xDC00...0xDFFF).contains(low) else {
                    throw failure("unpaired surrogate in a \\u escape", at: escapeStart)
                }
                scalarValue = 0x10000 + ((UInt32(unit) - 0xD800) << 10) + (UInt32(low) - 0xDC00)
            case 0xDC00...0xDFFF:
                throw failure("unpaired surrogate in a \\u escape", at: escapeStart)
            default:
                break
            }
            guard let scalar = Unicode.Scalar(scalarValue) else {
                throw failure("invalid \\u escape", at: escapeStart)
            }
            buffer.append(contentsOf: String(Character(scalar)).utf8)
        default:
            throw failure("invalid escape sequence", at: position - 2)
        }
    }

    private mutating func parseHexQuad() throws(JSONSyntaxError) -> UInt16 {
        guard input.count - position >= 4 else { throw failure("unexpected end of input") }
        var value: UInt16 = 0
        for _ in 0..<4 {
            let byte = input[position]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw failure("invalid hex digit in a \\u escape")
            }
            value = value << 4 | UInt16(digit)
            position += 1
        }
        return value
    }

    // MARK: Helpers

    private func peek() -> UInt8? {
        position < input.count ? input[position] : nil
    }

    private mutating func skipWhitespace() {
        while let byte = peek(),
              byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 {
            position += 1
        }
    }

    private mutating func skipDigits() {
        while let byte = peek(), Self.isDigit(byte) { position += 1 }
    }

    private static func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    /// Keys are not secret, but a pathological one should not flood a message.
    private static func abbreviated(_ key: String) -> String {
        TerminalText.escaped(key.count <= 40 ? key : String(key.prefix(40)) + "…")
    }

    private func failure(_ reason: String, at offset: Int? = nil) -> JSONSyntaxError {
        let offset = min(offset ?? position, input.count)
        var line = 1
        var lineStart = 0
        for index in 0..<offset where input[index] == 0x0A {
            line += 1
            lineStart = index + 1
        }
        return JSONSyntaxError(reason: reason, offset: offset, line: line, column: offset - lineStart + 1)
    }
}
