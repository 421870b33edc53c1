import FoundationEssentials

/// Bytes that must not outlive their use: keys, passphrases, plaintext secrets.
///
/// The storage is wiped with `explicit_bzero` when the last copy goes away,
/// equality is checked in constant time (`CRYPTO_memcmp`), and `description`,
/// `debugDescription` and reflection never show the bytes.
public struct SecureBytes: Sendable {
    final class Storage: @unchecked Sendable {
        // Safe to share: the buffer is written only inside `init`, before the
        // storage is visible to anyone, and read-only afterwards.
        let buffer: UnsafeMutableRawBufferPointer
        /// Whether the buffer is on locked whole pages (`SecureMemory`).
        let locked: Bool

        init(count: Int) {
            // Never allocate zero bytes: some C calls want a valid pointer.
            locked = SecureMemory.isLocking
            if locked {
                let page = SecureMemory.pageSize
                let size = (Swift.max(count, 1) + page - 1) / page * page
                buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: page)
                buffer.initializeMemory(as: UInt8.self, repeating: 0)
                SecureMemory.lock(buffer)
            } else {
                buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Swift.max(count, 1), alignment: 16)
                buffer.initializeMemory(as: UInt8.self, repeating: 0)
            }
        }

        deinit {
            OpenSSLBackend.secureZero(buffer)
            if locked { SecureMemory.unlock(buffer) }
            buffer.deallocate()
        }
    }

    let storage: Storage
    /// The number of bytes held.
    public let count: Int

    /// Creates a buffer of `count` bytes filled by `initializer`.
    ///
    /// The buffer is wiped before the error propagates when `initializer` throws.
    /// - Parameters:
    ///   - count: The number of bytes.
    ///   - initializer: Writes the bytes; it receives exactly `count` bytes of zeroed memory.
    public init(count: Int, initializingWith initializer: (UnsafeMutableRawBufferPointer) throws -> Void) rethrows {
        precondition(count >= 0, "SecureBytes count must not be negative")
        let storage = Storage(count: count)
        try initializer(UnsafeMutableRawBufferPointer(rebasing: storage.buffer[0..<count]))
        self.storage = storage
        self.count = count
    }

    /// Copies `bytes` into a new zeroising buffer. Wipe the source yourself if you own it.
    public init(copying bytes: some ContiguousBytes) {
        let count = bytes.withUnsafeBytes { $0.count }
        self.init(count: count) { destination in
            bytes.withUnsafeBytes { source in
                if let base = source.baseAddress, count > 0 {
                    destination.copyMemory(from: UnsafeRawBufferPointer(start: base, count: count))
                }
            }
        }
    }

    /// An empty buffer.
    public static let empty = SecureBytes(count: 0) { _ in }

    /// Calls `body` with the bytes. The pointer must not escape `body`.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(rebasing: storage.buffer[0..<count]))
    }

    /// True when the buffer holds no bytes.
    public var isEmpty: Bool { count == 0 }

    /// A new buffer with the bytes of `range`.
    public func slice(_ range: Range<Int>) -> SecureBytes {
        precondition(range.lowerBound >= 0 && range.upperBound <= count, "SecureBytes slice out of range")
        return withUnsafeBytes { source in
            SecureBytes(copying: UnsafeRawBufferPointer(rebasing: source[range]))
        }
    }

    /// A new buffer holding `self` followed by `other`.
    public func appending(_ other: SecureBytes) -> SecureBytes {
        SecureBytes(count: count + other.count) { destination in
            withUnsafeBytes { first in
                UnsafeMutableRawBufferPointer(rebasing: destination[0..<first.count]).copyMemory(from: first)
            }
            other.withUnsafeBytes { second in
                UnsafeMutableRawBufferPointer(rebasing: destination[count...]).copyMemory(from: second)
            }
        }
    }
}

extension SecureBytes: ContiguousBytes {}

extension SecureBytes: Equatable {
    /// Compares in constant time for equal lengths (`CRYPTO_memcmp`); lengths are not secret.
    public static func == (lhs: SecureBytes, rhs: SecureBytes) -> Bool {
        guard lhs.count == rhs.count else { return false }
        return lhs.withUnsafeBytes { a in
            rhs.withUnsafeBytes { b in OpenSSLBackend.constantTimeEquals(a, b) }
        }
    }
}

extension SecureBytes: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// Says how many bytes, never which.
    public var description: String { "SecureBytes(\(count) bytes, redacted)" }
    /// Says how many bytes, never which.
    public var debugDescription: String { description }
    /// Hides the storage from `dump` and `Mirror`.
    public var customMirror: Mirror { Mirror(self, children: ["count": count], displayStyle: .struct) }
}
