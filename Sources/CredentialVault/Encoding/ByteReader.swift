/// Reads big-endian integers and fixed-length fields, throwing `VaultError.corrupt`
/// (naming the region) instead of reading past the end.
package struct ByteReader {
    package let bytes: [UInt8]
    package let region: String
    package private(set) var offset: Int

    package init(_ bytes: [UInt8], region: String, offset: Int = 0) {
        self.bytes = bytes
        self.region = region
        self.offset = offset
    }

    package var remaining: Int { bytes.count - offset }

    package mutating func readUInt8() throws -> UInt8 { try readInteger() }
    package mutating func readUInt16() throws -> UInt16 { try readInteger() }
    package mutating func readUInt32() throws -> UInt32 { try readInteger() }
    package mutating func readUInt64() throws -> UInt64 { try readInteger() }
    package mutating func readInt64() throws -> Int64 { Int64(bitPattern: try readInteger()) }

    package mutating func readBytes(_ count: Int) throws -> ArraySlice<UInt8> {
        guard count >= 0, count <= remaining else {
            throw VaultError.corrupt("\(region) ends early (needed \(count) bytes at offset \(offset), \(remaining) left)")
        }
        defer { offset += count }
        return bytes[offset..<(offset + count)]
    }

    private mutating func readInteger<T: FixedWidthInteger>() throws -> T {
        let size = MemoryLayout<T>.size
        let slice = try readBytes(size)
        var value: T = 0
        for byte in slice { value = (value << 8) | T(byte) }
        return value
    }
}
