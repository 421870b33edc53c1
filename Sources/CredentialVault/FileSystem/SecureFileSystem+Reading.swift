#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension SecureFileSystem {
    /// Reads a whole private file after checking it the way OpenSSH checks private keys.
    ///
    /// Opens with `O_RDONLY|O_NOFOLLOW|O_CLOEXEC|O_NONBLOCK` (non-blocking so a FIFO planted
    /// at the path cannot hang us; it is then refused as not a regular file) and checks the
    /// opened file with `fstat`: regular, owned by the effective user, no group/other bits,
    /// at most one link (none once a writer has renamed a new file over it), at most
    /// `maxBytes` long.
    /// - Parameters:
    ///   - path: the file.
    ///   - maxBytes: the largest size accepted; checked before reading and while reading.
    /// - Returns: the exact contents.
    /// - Throws: `VaultError` `.notFound`; `.insecurePermissions` for a symlink or an unsafe
    ///   file (the fix says e.g. "chmod 600"); `.corrupt` "file larger than N bytes"; `.io`.
    static func readPrivateFile(_ path: String, maxBytes: Int) throws -> [UInt8] {
        switch try readPrivateFile(path, maxBytes: maxBytes, unlessStartsWith: nil) {
        case let .contents(bytes): return bytes
        case .unchanged: return []   // not reached: no prefix was given
        }
    }

    /// What `readPrivateFile(_:maxBytes:unlessStartsWith:)` found.
    enum PrivateFileRead {
        /// The file has the expected size and starts with the expected bytes; the rest was not read.
        case unchanged
        /// The whole file.
        case contents([UInt8])
    }

    /// `readPrivateFile` with the same checks, but when the file is `expected.size` long and
    /// starts with `expected.prefix`, only that prefix is read and `.unchanged` returned. For
    /// the vault, the prefix is the header: it carries a fresh random nonce and a MAC on every
    /// write, so an equal header means the same write.
    static func readPrivateFile(_ path: String, maxBytes: Int, unlessStartsWith expected: (prefix: [UInt8], size: Int)?)
        throws -> PrivateFileRead {
        let read = try withUnfollowedFile(path, path: path, what: "the file") { descriptor, status -> PrivateFileRead in
            try PrivacyCheck.requirePrivateFile(status, path: path)
            guard Int(status.st_size) <= maxBytes else { throw VaultError.fileTooLarge(path, limit: maxBytes) }
            do throws(SyscallError) {
                if let expected, !expected.prefix.isEmpty, Int(status.st_size) == expected.size,
                   try Syscall.readAll(descriptor, expectedCount: expected.prefix.count, limit: expected.prefix.count,
                                       stoppingAt: expected.prefix.count) == expected.prefix {
                    return .unchanged
                }
                try Syscall.rewind(descriptor)
                return .contents(try Syscall.readAll(descriptor, expectedCount: Int(status.st_size), limit: maxBytes))
            } catch {
                // The file grew after fstat: treat it like a file that was too large from the start.
                if error.code == EFBIG && error.call == "read" { throw VaultError.fileTooLarge(path, limit: maxBytes) }
                throw error.vaultError("reading the file", path: path)
            }
        }
        guard let read else { throw VaultError.fileNotFound(path) }
        return read
    }
}
