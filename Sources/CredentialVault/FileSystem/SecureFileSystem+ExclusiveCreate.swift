#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension SecureFileSystem {
    /// Creates a new file with `contents` and mode 0600; never replaces an existing one.
    ///
    /// Opens with `O_WRONLY|O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC` (so a file or symlink at the
    /// path, even a dangling one, makes it fail), `fchmod` 0600, writes, fsyncs, closes and
    /// fsyncs the directory. On failure the half-written file is removed. A crash mid-write
    /// can leave a short file; for key files that is refused later for its size, which is
    /// why this does not go through a temporary name.
    /// - Parameters:
    ///   - path: the new file.
    ///   - contents: its complete contents.
    /// - Throws: `VaultError` `.alreadyExists` when anything is at `path`; `.io` otherwise.
    static func createFileExclusively(_ path: String, contents: [UInt8]) throws {
        let parts = try SplitPath(path)
        let directory = try openParentDirectory(of: parts, path: path)
        let file: OwnedDescriptor
        do {
            file = OwnedDescriptor(try Syscall.openFile(parts.name, in: directory.raw,
                                                        O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                                                        mode: privateFileMode))
        } catch {
            if error.code == EEXIST {
                throw VaultError(.alreadyExists, "a file already exists at this path", path: path,
                                 fix: "choose another path or remove the existing file first")
            }
            throw error.vaultError("creating the file", path: path)
        }
        do {
            do {
                try Syscall.setMode(of: file.raw, privateFileMode)
                try Syscall.writeAll(file.raw, contents[...])
            } catch {
                throw error.vaultError("writing the new file", path: path)
            }
            do {
                try Syscall.synchronize(file.raw)
            } catch {
                throw error.vaultError("syncing the new file to disk", path: path)
            }
            do {
                try file.close()
            } catch {
                throw error.vaultError("closing the new file", path: path)
            }
        } catch {
            // We created it, so it is ours to remove; the error that matters is being thrown.
            try? Syscall.unlinkEntry(parts.name, in: directory.raw)
            throw error
        }
        try synchronizeDirectory(directory.raw, path: path, afterReplacing: false)
    }
}
