#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import FoundationEssentials
import VaultCrypto

/// The agent's wire format: every message is a JSON header frame followed by the raw frames its
/// header announces (a secret, a passphrase, key bytes: never inside JSON, so never a `String`).
/// What the header holds is `AgentProtocol.swift`'s (`AgentRequest`, `AgentResponse`). A frame is a 4-byte
/// big-endian length and that many bytes. Sizes are bounded on both sides, reads and writes by a
/// deadline, so neither a malformed nor an endless message can hold a peer.
package struct AgentMessage: Sendable {
    /// The header.
    package var header: JSONValue
    /// The raw frames after it.
    package var secrets: [SecureBytes]

    /// A message.
    package init(_ header: JSONValue, secrets: [SecureBytes] = []) {
        self.header = header
        self.secrets = secrets
    }

    /// The largest header.
    package static let maximumHeaderBytes = 1 << 20
    /// The largest raw frame: a secret at its limit, with room.
    package static let maximumSecretBytes = VaultLimits.maximumSecretBytes + 64
    /// The most raw frames in one message.
    package static let maximumSecretCount = 100_000
    /// The most bytes in one message's raw frames.
    package static let maximumTotalBytes = 256 << 20
}

/// Reading and writing `AgentMessage`s on a socket, each step bounded by a deadline.
package enum AgentWire {
    /// The connection failed or broke mid-message (the peer died, the deadline passed, a frame too large).
    package struct Failure: Error, Sendable {
        /// What happened, for a message.
        package let reason: String
    }

    /// Sends a message.
    package static func send(_ message: AgentMessage, on descriptor: Int32, deadline: ContinuousClock.Instant) throws {
        var header: [UInt8]
        do {
            header = try message.header.serialized()
        } catch {
            throw Failure(reason: "a message could not be encoded")
        }
        var frames: [UInt8] = []
        frames.reserveCapacity(4 + header.count + message.secrets.reduce(0) { $0 + 4 + $1.count })
        frames += lengthPrefix(header.count) + header
        for secret in message.secrets {
            frames += lengthPrefix(secret.count)
            secret.withUnsafeBytes { frames += $0 }
        }
        defer { SecureWipe.wipe(&frames) }
        try writeAll(frames, to: descriptor, deadline: deadline)
    }

    /// Receives a message; nil when the peer closed the connection cleanly before a new message.
    package static func receive(on descriptor: Int32, deadline: ContinuousClock.Instant) throws -> AgentMessage? {
        guard let headerLength = try readLength(descriptor, deadline: deadline, allowEnd: true) else { return nil }
        guard headerLength <= AgentMessage.maximumHeaderBytes else { throw Failure(reason: "a header of \(headerLength) bytes is too large") }
        let headerBytes = try readExactly(headerLength, from: descriptor, deadline: deadline)
        let header: JSONValue
        do {
            header = try headerBytes.withUnsafeBytes { try JSONValue(parsing: $0) }
        } catch {
            throw Failure(reason: "a header is not JSON")
        }
        let count = AgentMessage.secretCount(announcedBy: header)
        guard count >= 0, count <= AgentMessage.maximumSecretCount else { throw Failure(reason: "too many frames") }
        var secrets: [SecureBytes] = []
        var total = 0
        for _ in 0..<count {
            guard let length = try readLength(descriptor, deadline: deadline, allowEnd: false) else { throw Failure(reason: "the message ended early") }
            guard length <= AgentMessage.maximumSecretBytes else { throw Failure(reason: "a frame of \(length) bytes is too large") }
            total += length
            guard total <= AgentMessage.maximumTotalBytes else { throw Failure(reason: "the message is too large") }
            secrets.append(try readExactly(length, from: descriptor, deadline: deadline))
        }
        return AgentMessage(header, secrets: secrets)
    }

    private static func lengthPrefix(_ length: Int) -> [UInt8] {
        let value = UInt32(truncatingIfNeeded: length)
        return [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)]
    }

    private static func readLength(_ descriptor: Int32, deadline: ContinuousClock.Instant, allowEnd: Bool) throws -> Int? {
        var bytes = [UInt8](repeating: 0, count: 4)
        let got = try read(into: &bytes, from: descriptor, deadline: deadline)
        if got == 0, allowEnd { return nil }
        guard got == 4 else { throw Failure(reason: "the connection closed in the middle of a message") }
        return Int(bytes[0]) << 24 | Int(bytes[1]) << 16 | Int(bytes[2]) << 8 | Int(bytes[3])
    }

    private static func readExactly(_ count: Int, from descriptor: Int32, deadline: ContinuousClock.Instant) throws -> SecureBytes {
        var failure: (any Error)?
        let bytes = SecureBytes(count: count) { buffer in
            do {
                var offset = 0
                while offset < count {
                    try waitFor(descriptor, events: Int16(POLLIN), deadline: deadline)
                    let got = Glibc.read(descriptor, buffer.baseAddress.map { $0 + offset }, count - offset)
                    if got < 0 {
                        if errno == EINTR || errno == EAGAIN { continue }
                        throw Failure(reason: "reading failed: \(String(cString: strerror(errno)))")
                    }
                    guard got > 0 else { throw Failure(reason: "the connection closed in the middle of a message") }
                    offset += got
                }
            } catch {
                failure = error
            }
        }
        if let failure { throw failure }
        return bytes
    }

    /// Reads up to `bytes.count` bytes; returns how many arrived before the end of the stream.
    private static func read(into bytes: inout [UInt8], from descriptor: Int32, deadline: ContinuousClock.Instant) throws -> Int {
        var offset = 0
        while offset < bytes.count {
            try waitFor(descriptor, events: Int16(POLLIN), deadline: deadline)
            let got = bytes.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress.map { $0 + offset }, $0.count - offset) }
            if got < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                throw Failure(reason: "reading failed: \(String(cString: strerror(errno)))")
            }
            if got == 0 { return offset }
            offset += got
        }
        return offset
    }

    private static func writeAll(_ bytes: [UInt8], to descriptor: Int32, deadline: ContinuousClock.Instant) throws {
        var offset = 0
        while offset < bytes.count {
            try waitFor(descriptor, events: Int16(POLLOUT), deadline: deadline)
            let written = bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress.map { $0 + offset }, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if written < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                throw Failure(reason: "writing failed: \(String(cString: strerror(errno)))")
            }
            offset += written
        }
    }

    /// Waits until `descriptor` is ready or the deadline passes.
    private static func waitFor(_ descriptor: Int32, events: Int16, deadline: ContinuousClock.Instant) throws {
        while true {
            let remaining = deadline - ContinuousClock.now
            guard remaining > .zero else { throw Failure(reason: "the other side did not answer in time") }
            let milliseconds = Int32(clamping: remaining.components.seconds * 1000 + remaining.components.attoseconds / 1_000_000_000_000_000 + 1)
            var poller = pollfd(fd: descriptor, events: events, revents: 0)
            let ready = poll(&poller, 1, milliseconds)
            if ready < 0 {
                if errno == EINTR { continue }
                throw Failure(reason: "waiting failed: \(String(cString: strerror(errno)))")
            }
            if ready > 0 { return }
        }
    }
}
