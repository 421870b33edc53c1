#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension SecureFileSystem {
    /// Overwrites a small file with zeros (same length), fsyncs it, then removes it durably.
    ///
    /// Used for the vault file (`wipe`) and key files (`wipe --destroy-key-file`). The
    /// overwrite reaches the blocks the file holds now, and only on file systems that rewrite
    /// in place (ext4, xfs, tmpfs). Earlier versions of the file live in blocks it no longer
    /// holds (every atomic replace writes a new file), and copy-on-write file systems (btrfs,
    /// zfs), journals, snapshots and SSD wear levelling keep old blocks too: none of those
    /// is erased. Destroying the key file is what makes such leftovers undecryptable.
    /// - Parameter path: a private file (the checks of `readPrivateFile`): a symlink, a file
    ///   with another hard link (zeroing it would destroy the other name's contents), another
    ///   owner or group/other access is refused before anything is written.
    /// - Throws: `VaultError` `.notFound`, `.insecurePermissions` (symlink, not a regular
    ///   file, other owner, hard links, group/other access), `.io`.
    static func overwriteAndRemove(_ path: String) throws {
        let parts = try SplitPath(path)
        let directory = try openParentDirectory(of: parts, path: path)
        try overwriteAndRemove(parts.name, in: directory, path: path, requiredSize: nil)
    }

    /// `overwriteAndRemove` for a key file: its folder is opened by descriptor and must be
    /// safe (`openTrustedDirectory`: no symlink swapped in, no folder on the way writable by
    /// others without the sticky bit), and the file must be exactly `size` bytes, so that a
    /// mistyped path cannot zero an unrelated file.
    /// - Throws: `VaultError` `.notFound`, `.insecurePermissions`, `.invalidKey` for the wrong size, `.io`.
    static func overwriteAndRemoveKeyFile(_ path: String, size: Int) throws {
        let parts = try SplitPath(path)
        let directory = try openTrustedDirectory(parts.directory)
        try overwriteAndRemove(parts.name, in: directory, path: path, requiredSize: size)
    }

    private static func overwriteAndRemove(_ name: String, in directory: borrowing OwnedDescriptor, path: String,
                                           requiredSize: Int?) throws {
        let file: OwnedDescriptor
        do {
            file = OwnedDescriptor(try Syscall.openFile(name, in: directory.raw,
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
        try PrivacyCheck.requirePrivateFile(status, path: path)
        if let requiredSize, Int(status.st_size) != requiredSize {
            throw VaultError(.invalidKey, "refusing to destroy the file: a key file holds exactly \(requiredSize) bytes, this one \(status.st_size)",
                             path: path, fix: "check the path; nothing was changed")
        }
        try overwriteWithZeros(file, count: Int(status.st_size), path: path)
        do {
            try Syscall.unlinkEntry(name, in: directory.raw)
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
