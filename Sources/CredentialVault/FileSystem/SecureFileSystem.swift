#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Everything the stores need from the file system, done safely: private directories,
/// checked reads, durable atomic replaces, removal and overwrite-then-remove.
///
/// All system calls go through `Syscall`; every failure becomes a `VaultError` that names
/// the path. The operations are synchronous and thread-safe (they share no state), but
/// a read-modify-write still needs the caller to hold a `FileLock`.
package enum SecureFileSystem {
    /// Mode of every file this layer creates.
    static let privateFileMode: mode_t = 0o600
    /// Mode of every directory this layer creates.
    static let privateDirectoryMode: mode_t = 0o700

    /// Whether anything (file, directory, dangling symlink) is at `path`.
    ///
    /// Uses `lstat(2)`: `ENOENT` and `ENOTDIR` (a parent is a file) mean "no"; other
    /// errors (for example `EACCES`) answer "yes" so the caller goes on to open the path
    /// and reports the real error.
    /// - Returns: false only when the path does not exist.
    static func exists(_ path: String) -> Bool {
        do {
            _ = try Syscall.linkStatus(path)
            return true
        } catch {
            return error.code != ENOENT && error.code != ENOTDIR
        }
    }

    /// Opens the directory that contains (or will contain) `path`, for `*at` calls and
    /// for fsyncing it. Symlinks in the directory part are followed; the vault directory
    /// itself is checked separately with `checkPrivateDirectory`.
    /// - Throws: `VaultError` `.notFound` when it does not exist, `.io` otherwise.
    static func openParentDirectory(of parts: SplitPath, path: String) throws(VaultError) -> OwnedDescriptor {
        do {
            return OwnedDescriptor(try Syscall.openFile(parts.directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC))
        } catch {
            if error.code == ENOENT { throw .fileNotFound(parts.directory, isDirectory: true) }
            throw error.vaultError("opening the directory of the file", path: path)
        }
    }
}
