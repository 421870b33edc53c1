/// Wiping of ordinary buffers that briefly held secrets.
public enum SecureWipe {
    /// Overwrites every byte of `bytes` with zeros in a way the optimiser cannot drop (`explicit_bzero`, through the shim).
    public static func wipe(_ bytes: inout [UInt8]) {
        bytes.withUnsafeMutableBytes { OpenSSLBackend.secureZero($0) }
    }
}
