import FoundationEssentials

/// Any JSON value, for data whose shape the vault does not own: settings, unknown keys
/// kept on rewrite, JWT headers and claims.
///
/// Numbers read are `Double`s: integers up to 2^53 survive exactly and are written back
/// without a fraction or exponent (`1700000000`, not `1.7e9`); larger integers keep about 16
/// digits. Counters the vault writes itself (generations, counts) use `.integer`, which is
/// written exactly whatever its size.
public enum JSONValue: Sendable, Hashable {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// A finite number.
    case number(Double)
    /// An integer written exactly, digit for digit (`18446744073709551615` stays that).
    /// Only built by code; parsing gives `.number`. `.integer(5)` and `.number(5)` are
    /// written the same but are not equal values.
    case integer(Int128)
    /// A string.
    case string(String)
    /// An array.
    case array([JSONValue])
    /// An object; key order is not kept (keys are written sorted).
    case object([String: JSONValue])
}

// MARK: - Parsing and writing

extension JSONValue {
    /// Parses one JSON text (RFC 8259), strictly: no trailing commas, comments, duplicate
    /// keys, invalid UTF-8 or lone surrogates; numbers must be finite doubles.
    /// - Parameter bytes: UTF-8 JSON text; one leading byte-order mark is skipped.
    /// - Throws: `VaultError` `.invalidInput` saying what is wrong and where (line, column),
    ///   never quoting the text.
    public init(parsing bytes: some ContiguousBytes) throws {
        do {
            self = try JSONParser.parse(bytes)
        } catch {
            throw VaultError(.invalidInput, "not valid JSON: \(error)")
        }
    }

    /// The JSON text of this value, keys sorted so equal values give equal bytes.
    /// - Parameter prettyPrinted: one member per line, indented by two spaces.
    /// - Returns: UTF-8 bytes, without a trailing newline.
    /// - Throws: `VaultError` `.invalidInput` when a number is NaN or infinite.
    public func serialized(prettyPrinted: Bool = false) throws -> [UInt8] {
        var writer = JSONWriter(prettyPrinted: prettyPrinted)
        try writer.write(self)
        return writer.bytes
    }
}

// MARK: - Accessors

extension JSONValue {
    /// True for `null`.
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// The Boolean, or nil when this is not `true`/`false`.
    public var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// The number, or nil when this is not a number.
    public var doubleValue: Double? {
        if case .number(let value) = self { return value }
        if case .integer(let value) = self { return Double(value) }
        return nil
    }

    /// The number when it is a whole number that fits `Int`, else nil (`1.5` and `"1"` give nil).
    public var intValue: Int? {
        if case .number(let value) = self { return Int(exactly: value) }
        if case .integer(let value) = self { return Int(exactly: value) }
        return nil
    }

    /// The string, or nil when this is not a string.
    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The elements, or nil when this is not an array.
    public var arrayValue: [JSONValue]? {
        if case .array(let value) = self { return value }
        return nil
    }

    /// The members, or nil when this is not an object.
    public var objectValue: [String: JSONValue]? {
        if case .object(let value) = self { return value }
        return nil
    }

    /// The member named `key`, or nil when absent or when this is not an object.
    public subscript(key: String) -> JSONValue? {
        objectValue?[key]
    }

    /// The element at `index`, or nil when out of range or when this is not an array.
    public subscript(index: Int) -> JSONValue? {
        guard case .array(let elements) = self, elements.indices.contains(index) else { return nil }
        return elements[index]
    }

    /// "null", "a Boolean", "a number", "a string", "an array" or "an object", for messages.
    var kindDescription: String {
        switch self {
        case .null: "null"
        case .bool: "a Boolean"
        case .number, .integer: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

// MARK: - Codable

extension JSONValue: Codable {
    /// Decodes whatever single value the decoder holds.
    /// - Throws: `DecodingError.dataCorrupted` when it is none of the JSON kinds.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else if let value = try? container.decode([String: JSONValue].self) {
            self = .object(value)
        } else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not a JSON value")
        }
    }

    /// Encodes as a single value; whole numbers are encoded as integers.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .number(let value):
            if let integer = JSONWriter.exactInteger(value) {
                try container.encode(integer)
            } else {
                try container.encode(value)
            }
        case .integer(let value):
            if let signed = Int64(exactly: value) {
                try container.encode(signed)
            } else if let unsigned = UInt64(exactly: value) {
                try container.encode(unsigned)
            } else {
                try container.encode(String(value))
            }
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }
}

// MARK: - Literals

extension JSONValue: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral,
    ExpressibleByDictionaryLiteral {
    /// `null`.
    public init(nilLiteral: ()) { self = .null }
    /// A Boolean.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    /// A whole number.
    public init(integerLiteral value: Int) { self = .number(Double(value)) }
    /// A number.
    public init(floatLiteral value: Double) { self = .number(value) }
    /// A string.
    public init(stringLiteral value: String) { self = .string(value) }
    /// An array.
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    /// An object; a repeated key keeps its last value.
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}
