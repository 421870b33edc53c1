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
