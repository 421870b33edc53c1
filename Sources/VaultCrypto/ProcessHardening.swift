/// Hardening for processes that hold secrets in memory.
public enum ProcessHardening {
    /// Disables core dumps (`RLIMIT_CORE = 0`) and ptrace attach / `/proc/PID/mem`
    /// reads by other same-user processes (`prctl(PR_SET_DUMPABLE, 0)`).
    /// - Returns: true when both calls succeeded.
    @discardableResult
    public static func disableCoreDumps() -> Bool {
        OpenSSLBackend.disableCoreDumps()
    }
}

/// File attributes that Swift's Glibc module does not reach, for the store's permission checks.
package enum FileAttributes {
    /// The POSIX access ACL of an open file, as the kernel stores it; nil when it has none.
    package static func accessACL(of descriptor: Int32) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: 1024)
        let count = bytes.withUnsafeMutableBytes { OpenSSLBackend.posixAccessACL(descriptor, into: $0) }
        guard count > 0 else { return nil }
        return Array(bytes[0..<Int(count)])
    }
}
