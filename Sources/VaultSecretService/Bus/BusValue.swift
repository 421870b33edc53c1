import CredentialVault

/// One D-Bus value, as a message's body holds it: what the provider reads from a call and writes
/// into a reply, without a type per method. A byte array (`ay`) is held in zeroising memory
/// (`SecureBytes`), since secrets travel as byte arrays.
indirect enum BusValue: Sendable {
    case byte(UInt8)
    case boolean(Bool)
    case int16(Int16)
    case uint16(UInt16)
    case int32(Int32)
    case uint32(UInt32)
    case int64(Int64)
    case uint64(UInt64)
    case double(Double)
    case string(String)
    case objectPath(String)
    case signature(String)
    /// A file descriptor (`h`), as the message numbers it; only read, never kept.
    case unixFD(Int32)
    /// An array of bytes (`ay`).
    case bytes(SecureBytes)
    /// An array of anything else; `element` is the elements' signature (needed when it is empty).
    case array(element: String, [BusValue])
    /// A structure (`(…)`).
    case structure([BusValue])
    /// One entry of a dictionary (`{kv}`), only inside an array.
    case dictionaryEntry(BusValue, BusValue)
    /// A variant (`v`).
    case variant(BusValue)

    /// The value's D-Bus signature.
    var signature: String {
        switch self {
        case .byte: "y"
        case .boolean: "b"
        case .int16: "n"
        case .uint16: "q"
        case .int32: "i"
        case .uint32: "u"
        case .int64: "x"
        case .uint64: "t"
        case .double: "d"
        case .string: "s"
        case .objectPath: "o"
        case .signature: "g"
        case .unixFD: "h"
        case .bytes: "ay"
        case let .array(element, _): "a" + element
        case let .structure(members): "(" + members.map(\.signature).joined() + ")"
        case let .dictionaryEntry(key, value): "{" + key.signature + value.signature + "}"
        case .variant: "v"
        }
    }

    // MARK: Building

    /// An array of object paths (`ao`).
    static func paths(_ paths: [String]) -> BusValue {
        .array(element: "o", paths.map(BusValue.objectPath))
    }

    /// A string → string dictionary (`a{ss}`), sorted by key.
    static func stringDictionary(_ dictionary: [String: String]) -> BusValue {
        .array(element: "{ss}", dictionary.sorted { $0.key < $1.key }.map { .dictionaryEntry(.string($0.key), .string($0.value)) })
    }

    /// A string → variant dictionary (`a{sv}`), sorted by key.
    static func properties(_ dictionary: [String: BusValue]) -> BusValue {
        .array(element: "{sv}", dictionary.sorted { $0.key < $1.key }.map { .dictionaryEntry(.string($0.key), .variant($0.value)) })
    }

    // MARK: Reading

    /// The string of a `s`, `o` or `g`; nil for anything else.
    var stringValue: String? {
        switch self {
        case let .string(text), let .objectPath(text), let .signature(text): text
        default: nil
        }
    }

    /// The object path of an `o`; nil for anything else.
    var objectPathValue: String? {
        if case let .objectPath(path) = self { return path }
        return nil
    }

    /// The flag of a `b`; nil for anything else.
    var booleanValue: Bool? {
        if case let .boolean(flag) = self { return flag }
        return nil
    }

    /// The integer of a `u`; nil for anything else.
    var uint32Value: UInt32? {
        if case let .uint32(number) = self { return number }
        return nil
    }

    /// The integer of a `t`; nil for anything else.
    var uint64Value: UInt64? {
        if case let .uint64(number) = self { return number }
        return nil
    }

    /// What a variant holds (the value itself when it is not a variant).
    var unwrapped: BusValue {
        if case let .variant(inner) = self { return inner.unwrapped }
        return self
    }

    /// The elements of an array; nil for anything else.
    var elements: [BusValue]? {
        if case let .array(_, elements) = self { return elements }
        return nil
    }

    /// The object paths of an `ao`; nil for anything else.
    var objectPaths: [String]? {
        guard case let .array(element, elements) = self, element == "o" else { return nil }
        return elements.compactMap(\.objectPathValue)
    }

    /// The entries of an `a{s…}` by key (later duplicates win); nil for anything else.
    var dictionary: [String: BusValue]? {
        guard let elements else { return nil }
        var result: [String: BusValue] = [:]
        for element in elements {
            guard case let .dictionaryEntry(key, value) = element, let name = key.stringValue else { return nil }
            result[name] = value
        }
        return result
    }

    /// The entries of an `a{ss}`; nil for anything else.
    var stringDictionaryValue: [String: String]? {
        guard case let .array(element, _) = self, element == "{ss}", let entries = dictionary else { return nil }
        var result: [String: String] = [:]
        for (key, value) in entries {
            guard let text = value.stringValue else { return nil }
            result[key] = text
        }
        return result
    }
}
