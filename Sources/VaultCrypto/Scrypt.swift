import FoundationEssentials

/// scrypt (RFC 7914) through `EVP_PBE_scrypt`, with `maxmem` always explicit and
/// parameters checked against bounds before any work is done.
public enum Scrypt {
    /// The cost parameters: N = 2^logN, block size r, parallelism p.
    public struct Parameters: Sendable, Hashable, CustomStringConvertible {
        /// log2 of the CPU/memory cost N.
        public var logN: UInt8
        /// The block size r.
        public var r: UInt32
        /// The parallelisation p.
        public var p: UInt32

        /// Creates parameters; they are checked against `Bounds` when used.
        public init(logN: UInt8, r: UInt32, p: UInt32) {
            self.logN = logN
            self.r = r
            self.p = p
        }

        /// N = 2^logN (0 when logN is too large to represent).
        public var n: UInt64 { logN < 64 ? UInt64(1) << UInt64(logN) : 0 }

        /// The memory scrypt needs: 128·r·(N + 2) for V plus 128·r·p for B (nil on overflow).
        public var requiredMemoryBytes: UInt64? {
            let r64 = UInt64(r), p64 = UInt64(p)
            let (v1, o1) = UInt64(128).multipliedReportingOverflow(by: r64)
            let (nPlus2, o2) = n.addingReportingOverflow(2)
            let (v, o3) = v1.multipliedReportingOverflow(by: nPlus2)
            let (b, o4) = v1.multipliedReportingOverflow(by: p64)
            let (total, o5) = v.addingReportingOverflow(b)
            return (o1 || o2 || o3 || o4 || o5) ? nil : total
        }

        /// "logN=17 r=8 p=1".
        public var description: String { "logN=\(logN) r=\(r) p=\(p)" }
    }

    /// The range of parameters a caller accepts. Anything outside is refused before scrypt runs.
    public struct Bounds: Sendable, Hashable {
        /// Accepted log2(N).
        public var logN: ClosedRange<UInt8>
        /// Accepted r.
        public var r: ClosedRange<UInt32>
        /// Accepted p.
        public var p: ClosedRange<UInt32>
        /// The `maxmem` ceiling passed to OpenSSL.
        public var maximumMemoryBytes: UInt64
        /// The most work accepted, as N·r·p (scrypt's running time is proportional to it).
        public var maximumWork: UInt64

        /// Creates bounds.
        public init(logN: ClosedRange<UInt8>, r: ClosedRange<UInt32>, p: ClosedRange<UInt32>, maximumMemoryBytes: UInt64,
                    maximumWork: UInt64 = 1 << 24) {
            self.logN = logN
            self.r = r
            self.p = p
            self.maximumMemoryBytes = maximumMemoryBytes
            self.maximumWork = maximumWork
        }

        /// Wide enough for RFC 7914's vectors, narrow enough that a hostile file cannot
        /// make us allocate more than 1.25 GiB or do more work than N·r·p = 2^24 (about 10 s here).
        public static let standard = Bounds(logN: 1...20, r: 1...32, p: 1...16, maximumMemoryBytes: 1_342_177_280)

        /// Throws unless `parameters` lie inside these bounds.
        /// - Throws: `CryptoError.parameterOutOfBounds`.
        public func check(_ parameters: Parameters) throws {
            guard logN.contains(parameters.logN) else {
                throw CryptoError.parameterOutOfBounds("logN", "\(parameters.logN) is outside \(logN.lowerBound)...\(logN.upperBound)")
            }
            guard r.contains(parameters.r) else {
                throw CryptoError.parameterOutOfBounds("r", "\(parameters.r) is outside \(r.lowerBound)...\(r.upperBound)")
            }
            guard p.contains(parameters.p) else {
                throw CryptoError.parameterOutOfBounds("p", "\(parameters.p) is outside \(p.lowerBound)...\(p.upperBound)")
            }
            let (work, overflow) = parameters.n.multipliedReportingOverflow(by: UInt64(parameters.r) * UInt64(parameters.p))
            guard !overflow, work <= maximumWork else {
                throw CryptoError.parameterOutOfBounds("work", "\(parameters) exceeds N·r·p = \(maximumWork)")
            }
            guard let memory = parameters.requiredMemoryBytes, memory <= maximumMemoryBytes else {
                throw CryptoError.parameterOutOfBounds("memory", "\(parameters) needs more than \(maximumMemoryBytes) bytes")
            }
        }
    }

    /// Derives a key from a password.
    /// - Parameters:
    ///   - password: The password bytes (may be empty).
    ///   - salt: The salt.
    ///   - parameters: N, r, p.
    ///   - outputByteCount: 1 to 1,024 bytes.
    ///   - bounds: What the caller accepts; checked before any work.
    /// - Returns: The derived key in a zeroising buffer.
    /// - Throws: `CryptoError.parameterOutOfBounds`, or `CryptoError` when libcrypto fails.
    public static func deriveKey(password: some ContiguousBytes, salt: some ContiguousBytes, parameters: Parameters,
                                 outputByteCount: Int, bounds: Bounds = .standard) throws -> SecureBytes {
        try bounds.check(parameters)
        guard (1...1024).contains(outputByteCount) else {
            throw CryptoError.parameterOutOfBounds("outputByteCount", "must be 1...1024, got \(outputByteCount)")
        }
        guard let required = parameters.requiredMemoryBytes else {
            throw CryptoError.parameterOutOfBounds("memory", "overflow")
        }
        // Pass exactly what is needed plus a page of slack: never OpenSSL's 32 MiB default.
        let maxMemory = required + 4096
        return try SecureBytes(count: outputByteCount) { out in
            try password.withUnsafeBytes { passwordBuffer in
                try salt.withUnsafeBytes { saltBuffer in
                    try OpenSSLBackend.scrypt(password: passwordBuffer, salt: saltBuffer, n: parameters.n,
                                              r: UInt64(parameters.r), p: UInt64(parameters.p),
                                              maxMemory: maxMemory, into: out)
                }
            }
        }
    }
}
