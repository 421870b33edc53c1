#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension SecureFileSystem {
    /// Overwrites a small file with zeros (same length), fsyncs it, then removes it durably.
    ///
    /// Used to crypto-shred key material. It only helps on file systems that rewrite in
    /// place (ext4, xfs, tmpfs); copy-on-write file systems (btrfs, zfs) and SSD wear
    /// levelling may keep the old blocks, which is why the vault encrypts what it stores.
    /// - Parameter path: a regular file owned by the effective user; a symlink is refused.
    /// - Throws: `VaultError` `.notFound`, `.insecurePermissions` (symlink, not a regular
    ///   file, other owner), `.io`.
    static func overwriteAndRemove(_ path: String) throws {
        let parts = try SplitPath(path)
        let directory = try openParentDirectory(of: parts, path: path)
        let file: OwnedDescriptor
        do {
            file = OwnedDescriptor(try Syscall.openFile(parts.name, in: directory.raw,
                                                        O_WRONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK))
        } catch {
            switch error.code {
            case ENOENT: throw VaultError.fileNotFound(path)
            case ELOOP: throw VaultError.symbolicLink(path)
            default: throw error.vaultError("opening the file to overwrite it", path: path)
            }
        }
        let status: stat
        do {
            status = try Syscall.status(of: file.raw)
        } catch {
            throw error.vaultError("checking the file", path: path)
        }
        try PrivacyCheck.requireOwnedRegularFile(status, path: path)
        try overwriteWithZeros(file, count: Int(status.st_size), path: path)
        do {
            try Syscall.unlinkEntry(parts.name, in: directory.raw)
        } catch {
            throw error.vaultError("removing the overwritten file", path: path)
        }
        try synchronizeDirectory(directory.raw, path: path, afterReplacing: false)
    }

    /// Writes `count` zero bytes from offset 0, fsyncs and closes.
    private static func overwriteWithZeros(_ file: consuming OwnedDescriptor, count: Int, path: String) throws(VaultError) {
        let zeros = [UInt8](repeating: 0, count: min(count, 64 * 1024))
        var offset = 0
        do {
            while offset < count {
                let length = min(zeros.count, count - offset)
                try Syscall.writeAll(file.raw, zeros[0..<length], at: offset)
                offset += length
            }
        } catch {
            throw error.vaultError("overwriting the file", path: path)
        }
        do {
            try Syscall.synchronize(file.raw)
        } catch {
            throw error.vaultError("syncing the overwritten file", path: path)
        }
        do {
            try file.close()
        } catch {
            throw error.vaultError("closing the overwritten file", path: path)
        }
    }
}
