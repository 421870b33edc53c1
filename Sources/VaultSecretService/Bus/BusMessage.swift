#if canImport(Glibc)
import Glibc
#endif
import CSystemdBus
import CredentialVault

/// Reads a message's body into `BusValue`s and appends `BusValue`s to a message, through sd-bus's
/// non-variadic calls (`sd_bus_message_peek_type`, `read_basic`, `read_array`, `enter_container`,
/// `append_basic`, `append_array`, `open_container`). Every return code is checked.
enum BusMessage {
    /// The most values read from one message, nested ones included: a bound on a hostile body.
    static let maximumValues = 1 << 20

    /// Every value of the body, in order.
    /// - Throws: `BusError.invalidArguments` for a body sd-bus cannot read, or one too large.
    static func readBody(_ message: OpaquePointer) throws -> [BusValue] {
        var budget = maximumValues
        var values: [BusValue] = []
        while let value = try readValue(message, budget: &budget) { values.append(value) }
        return values
    }

    /// The next value at the current level; nil at its end.
    private static func readValue(_ message: OpaquePointer, budget: inout Int) throws -> BusValue? {
        budget -= 1
        guard budget > 0 else { throw BusError.invalidArguments("the message holds too many values") }
        var type: CChar = 0
        var contents: UnsafePointer<CChar>?
        let peeked = sd_bus_message_peek_type(message, &type, &contents)
        try check(peeked, "reading the message")
        guard peeked > 0 else { return nil }
        let inner = contents.map { String(cString: $0) } ?? ""
        switch UInt8(bitPattern: type) {
        case UInt8(ascii: "a") where inner == "y":
            var pointer: UnsafeRawPointer?
            var size = 0
            try check(sd_bus_message_read_array(message, CChar(UInt8(ascii: "y")), &pointer, &size), "reading a byte array")
            guard let pointer, size > 0 else { return .bytes(.empty) }
            return .bytes(SecureBytes(copying: UnsafeRawBufferPointer(start: pointer, count: size)))
        case UInt8(ascii: "a"):
            try check(sd_bus_message_enter_container(message, type, inner), "reading an array")
            var elements: [BusValue] = []
            while let element = try readValue(message, budget: &budget) { elements.append(element) }
            try check(sd_bus_message_exit_container(message), "reading an array")
            return .array(element: inner, elements)
        case UInt8(ascii: "v"), UInt8(ascii: "r"), UInt8(ascii: "e"):
            try check(sd_bus_message_enter_container(message, type, inner), "reading a container")
            var members: [BusValue] = []
            while let member = try readValue(message, budget: &budget) { members.append(member) }
            try check(sd_bus_message_exit_container(message), "reading a container")
            switch UInt8(bitPattern: type) {
            case UInt8(ascii: "v"):
                guard members.count == 1 else { throw BusError.invalidArguments("a variant must hold one value") }
                return .variant(members[0])
            case UInt8(ascii: "e"):
                guard members.count == 2 else { throw BusError.invalidArguments("a dictionary entry must hold two values") }
                return .dictionaryEntry(members[0], members[1])
            default:
                return .structure(members)
            }
        default:
            return try readBasic(message, type: type)
        }
    }

    private static func readBasic(_ message: OpaquePointer, type: CChar) throws -> BusValue {
        func read<T>(_ initial: T) throws -> T {
            var value = initial
            try check(sd_bus_message_read_basic(message, type, &value), "reading a value")
            return value
        }
        switch UInt8(bitPattern: type) {
        case UInt8(ascii: "y"): return .byte(try read(UInt8(0)))
        case UInt8(ascii: "b"): return .boolean(try read(Int32(0)) != 0)
        case UInt8(ascii: "n"): return .int16(try read(Int16(0)))
        case UInt8(ascii: "q"): return .uint16(try read(UInt16(0)))
        case UInt8(ascii: "i"): return .int32(try read(Int32(0)))
        case UInt8(ascii: "u"): return .uint32(try read(UInt32(0)))
        case UInt8(ascii: "x"): return .int64(try read(Int64(0)))
        case UInt8(ascii: "t"): return .uint64(try read(UInt64(0)))
        case UInt8(ascii: "d"): return .double(try read(Double(0)))
        case UInt8(ascii: "h"): return .unixFD(try read(Int32(-1)))
        case UInt8(ascii: "s"), UInt8(ascii: "o"), UInt8(ascii: "g"):
            let pointer: UnsafePointer<CChar>? = try read(nil)
            let text = pointer.map { String(cString: $0) } ?? ""
            switch UInt8(bitPattern: type) {
            case UInt8(ascii: "s"): return .string(text)
            case UInt8(ascii: "o"): return .objectPath(text)
            default: return .signature(text)
            }
        default:
            throw BusError.invalidArguments("the message holds a value of an unknown type")
        }
    }

    /// Appends `values` to `message`, in order.
    /// - Throws: `BusError` when sd-bus refuses one (an invalid object path, string or signature).
    static func append(_ values: [BusValue], to message: OpaquePointer) throws {
        for value in values { try append(value, to: message) }
    }

    private static func append(_ value: BusValue, to message: OpaquePointer) throws {
        func basic<T>(_ type: UInt8, _ value: T) throws {
            var copy = value
            try check(sd_bus_message_append_basic(message, CChar(type), &copy), "writing a value")
        }
        func text(_ type: UInt8, _ text: String) throws {
            try check(text.withCString { sd_bus_message_append_basic(message, CChar(type), $0) }, "writing a string")
        }
        func container(_ type: UInt8, _ contents: String, _ members: [BusValue]) throws {
            try check(sd_bus_message_open_container(message, CChar(type), contents), "writing a container")
            for member in members { try append(member, to: message) }
            try check(sd_bus_message_close_container(message), "writing a container")
        }
        switch value {
        case let .byte(number): try basic(UInt8(ascii: "y"), number)
        case let .boolean(flag): try basic(UInt8(ascii: "b"), Int32(flag ? 1 : 0))
        case let .int16(number): try basic(UInt8(ascii: "n"), number)
        case let .uint16(number): try basic(UInt8(ascii: "q"), number)
        case let .int32(number): try basic(UInt8(ascii: "i"), number)
        case let .uint32(number): try basic(UInt8(ascii: "u"), number)
        case let .int64(number): try basic(UInt8(ascii: "x"), number)
        case let .uint64(number): try basic(UInt8(ascii: "t"), number)
        case let .double(number): try basic(UInt8(ascii: "d"), number)
        case let .unixFD(descriptor): try basic(UInt8(ascii: "h"), descriptor)
        case let .string(string): try text(UInt8(ascii: "s"), string)
        case let .objectPath(path): try text(UInt8(ascii: "o"), path)
        case let .signature(signature): try text(UInt8(ascii: "g"), signature)
        case let .bytes(bytes):
            try check(bytes.withUnsafeBytes { sd_bus_message_append_array(message, CChar(UInt8(ascii: "y")), $0.baseAddress, $0.count) },
                      "writing a byte array")
        case let .array(element, elements): try container(UInt8(ascii: "a"), element, elements)
        case let .structure(members): try container(UInt8(ascii: "r"), members.map(\.signature).joined(), members)
        case let .dictionaryEntry(key, value): try container(UInt8(ascii: "e"), key.signature + value.signature, [key, value])
        case let .variant(inner): try container(UInt8(ascii: "v"), inner.signature, [inner])
        }
    }

    /// Throws for a negative sd-bus return code.
    static func check(_ result: Int32, _ doing: String) throws {
        guard result >= 0 else { throw BusError.failed(doing, errno: -result) }
    }
}
