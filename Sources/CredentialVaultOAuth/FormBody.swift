import FoundationEssentials
import NIOCore
import VaultCrypto

/// An `application/x-www-form-urlencoded` body (RFC 6749 Appendix B), built straight from
/// bytes so that tokens and secrets need not become Swift strings.
struct FormBody {
    private(set) var buffer = ByteBuffer()

    /// The encoded form as text (for a URL's query: nothing secret goes there).
    var text: String { String(buffer: buffer) }

    mutating func append(_ name: String, _ value: String) {
        append(name, bytes: Array(value.utf8))
    }

    mutating func append(_ name: String, secret: SecureBytes) {
        secret.withUnsafeBytes { append(name, bytes: $0) }
    }

    private mutating func append(_ name: String, bytes: some Collection<UInt8>) {
        if buffer.readableBytes > 0 { buffer.writeInteger(UInt8(ascii: "&")) }
        Self.encode(Array(name.utf8), into: &buffer)
        buffer.writeInteger(UInt8(ascii: "="))
        Self.encode(bytes, into: &buffer)
    }

    /// Percent-encodes all but the unreserved characters of RFC 3986.
    static func encode(_ bytes: some Collection<UInt8>, into buffer: inout ByteBuffer) {
        let hex = Array("0123456789ABCDEF".utf8)
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."),
                 UInt8(ascii: "_"), UInt8(ascii: "~"):
                buffer.writeInteger(byte)
            default:
                buffer.writeInteger(UInt8(ascii: "%"))
                buffer.writeInteger(hex[Int(byte >> 4)])
                buffer.writeInteger(hex[Int(byte & 0x0F)])
            }
        }
    }

    /// The client id and secret for HTTP Basic: each form-encoded first (RFC 6749 §2.3.1).
    static func basicCredentials(clientID: String, secret: SecureBytes) -> String {
        var buffer = ByteBuffer()
        encode(Array(clientID.utf8), into: &buffer)
        buffer.writeInteger(UInt8(ascii: ":"))
        secret.withUnsafeBytes { encode($0, into: &buffer) }
        let bytes = buffer.readBytes(length: buffer.readableBytes) ?? []
        return "Basic " + Data(bytes).base64EncodedString()
    }
}
