/// Appends big-endian integers and length-prefixed fields to a byte buffer.
package struct ByteWriter {
    package private(set) var bytes: [UInt8]

    package init(capacity: Int = 256) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    package mutating func append(_ value: UInt8) { bytes.append(value) }
    package mutating func append(_ value: UInt16) { appendBigEndian(value) }
    package mutating func append(_ value: UInt32) { appendBigEndian(value) }
    package mutating func append(_ value: UInt64) { appendBigEndian(value) }
    package mutating func append(_ value: Int64) { appendBigEndian(UInt64(bitPattern: value)) }
    package mutating func append(contentsOf data: some Sequence<UInt8>) { bytes.append(contentsOf: data) }
    package mutating func appendZeros(_ count: Int) { bytes.append(contentsOf: repeatElement(0, count: count)) }

    private mutating func appendBigEndian<T: FixedWidthInteger>(_ value: T) {
        var big = value.bigEndian
        Swift.withUnsafeBytes(of: &big) { bytes.append(contentsOf: $0) }
    }
}
