#if canImport(Glibc)
import Glibc
#else
#error("vault runs on Linux (Glibc)")
#endif

/// Whether a host names this machine, decided from the host itself, never from a name lookup:
/// the one rule the OAuth client (plain `http` allowed only to loopback) and the PostgreSQL store
/// (TLS off only for loopback) share.
///
/// A loopback host is an IP literal that `inet_pton(3)` parses strictly (no leading zeros, no
/// shortened or octal forms: `127.0.0.08` and `127.1` are not addresses) inside 127.0.0.0/8, the
/// IPv6 literal `::1` (brackets allowed), or exactly `localhost` (any case), which is mapped to
/// `127.0.0.1` here so that no resolver is asked. An IPv4-mapped IPv6 address
/// (`::ffff:127.0.0.1`) is **not** loopback by this rule: it is refused rather than trusted,
/// since what it reaches depends on the socket's family and the system's settings.
package enum LoopbackHost {
    /// The address to connect to when `host` is loopback (`localhost` → `127.0.0.1`), else nil.
    package static func address(_ host: String) -> String? {
        var text = Substring(host)
        if text.hasPrefix("["), text.hasSuffix("]"), text.count >= 2 { text = text.dropFirst().dropLast() }
        let literal = String(text)
        if literal.lowercased() == "localhost" { return "127.0.0.1" }
        var v4 = in_addr()
        if inet_pton(AF_INET, literal, &v4) == 1 {
            // s_addr is in network order: the first octet is the lowest byte in memory.
            let firstOctet = withUnsafeBytes(of: &v4) { $0[0] }
            return firstOctet == 127 ? literal : nil
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, literal, &v6) == 1 {
            let bytes = withUnsafeBytes(of: &v6) { Array($0) }
            let isOne = bytes.dropLast().allSatisfy { $0 == 0 } && bytes.last == 1
            return isOne ? literal : nil
        }
        return nil
    }

    /// True when `host` is loopback (`address(host) != nil`).
    package static func isLoopback(_ host: String) -> Bool { address(host) != nil }
}
