/// Appends big-endian integers and length-prefixed fields to a byte buffer.
struct ByteWriter {
    private(set) var bytes: [UInt8]

    init(capacity: Int = 256) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    mutating func append(_ value: UInt8) { bytes.append(value) }
    mutating func append(_ value: UInt16) { appendBigEndian(value) }
    mutating func append(_ value: UInt32) { appendBigEndian(value) }
    mutating func append(_ value: UInt64) { appendBigEndian(value) }
    mutating func append(_ value: Int64) { appendBigEndian(UInt64(bitPattern: value)) }
    mutating func append(contentsOf data: some Sequence<UInt8>) { bytes.append(contentsOf: data) }
    mutating func appendZeros(_ count: Int) { bytes.append(contentsOf: repeatElement(0, count: count)) }

    private mutating func appendBigEndian<T: FixedWidthInteger>(_ value: T) {
        var big = value.bigEndian
        Swift.withUnsafeBytes(of: &big) { bytes.append(contentsOf: $0) }
    }
}
