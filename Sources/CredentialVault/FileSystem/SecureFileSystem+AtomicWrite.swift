#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension SecureFileSystem {
    /// Replaces `path` with `contents` so that a crash leaves either the old or the new
    /// file, never a mix, and the new file is on disk when this returns.
    ///
    /// Steps: create ".<name>.tmp.<16 hex>" in the same directory with
    /// `O_WRONLY|O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC` and mode 0600 (then `fchmod` 0600,
    /// so the umask cannot change it), write everything, `fsync`, `close`, refuse if `path`
    /// is now a symlink, `rename` over `path`, `fsync` the directory.
    /// On any failure before the rename the temporary file is removed and the old file is
    /// untouched. fsync errors are never retried.
    /// - Parameters:
    ///   - path: the file to replace or create.
    ///   - contents: the complete new contents.
    ///   - durable: false skips both fsyncs: still all-or-nothing for readers, but a power loss
    ///     may bring back the previous file (for files whose loss is harmless, such as the
    ///     rollback memory, which then only remembers less).
    /// - Throws: `VaultError` `.insecurePermissions` when `path` is a symlink; `.io` with the
    ///   errno text (e.g. "No space left on device"). If only the final directory fsync
    ///   fails, the new contents are already in place but may not survive a power loss; the
    ///   error says so.
    static func writeFileAtomically(_ path: String, contents: [UInt8], durable: Bool = true) throws {
        let parts = try SplitPath(path)
        let directory = try openParentDirectory(of: parts, path: path)
        try writeFileAtomically(parts.name, in: directory.raw, path: path, contents: contents, durable: durable)
    }

    /// `writeFileAtomically(_:contents:durable:)` in a directory already opened (and checked) by the caller.
    static func writeFileAtomically(_ name: String, in directory: Int32, path: String, contents: [UInt8],
                                    durable: Bool) throws {
        var temporaryName = ""
        let file = try createTemporaryFile(for: name, in: directory, path: path, name: &temporaryName)
        do {
            try fillAndClose(file, with: contents, path: path, synchronize: durable)
            try refuseSymbolicLink(name, in: directory, path: path)
            do {
                try Syscall.renameEntry(temporaryName, to: name, in: directory)
            } catch {
                throw error.vaultError("replacing the file", path: path)
            }
        } catch {
            // Best effort: the error that matters is the one being thrown.
            try? Syscall.unlinkEntry(temporaryName, in: directory)
            throw error
        }
        if durable { try synchronizeDirectory(directory, path: path, afterReplacing: true) }
    }

    /// Fsyncs a directory so a rename or unlink in it survives a crash.
    ///
    /// `EINVAL` means the file system cannot sync directories (some FUSE and network
    /// file systems); there is nothing more to do there, so it is not an error.
    static func synchronizeDirectory(_ directory: Int32, path: String, afterReplacing: Bool) throws(VaultError) {
        do {
            try Syscall.synchronize(directory)
        } catch {
            if error.code == EINVAL { return }
            let base = error.vaultError("syncing the directory", path: path)
            guard afterReplacing else { throw base }
            throw VaultError(.io, base.message + "; the new contents are in place but may not survive a power loss",
                             path: path, fix: "check the disk, then run the command again")
        }
    }

    /// Creates a new, empty, 0600 temporary file next to `basename`, retrying on the
    /// (astronomically unlikely) name collision.
    /// - Returns: the open file; its name is stored in `name`.
    private static func createTemporaryFile(
        for basename: String, in directory: Int32, path: String, name: inout String
    ) throws(VaultError) -> OwnedDescriptor {
        var attempts = 0
        while true {
            attempts += 1
            name = try TemporaryFileName.make(for: basename, path: path)
            let raw: Int32
            do {
                raw = try Syscall.openFile(name, in: directory, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                                           mode: privateFileMode)
            } catch {
                if error.code == EEXIST && attempts < 8 { continue }
                throw error.vaultError("creating a temporary file", path: path)
            }
            let file = OwnedDescriptor(raw)
            do {
                try Syscall.setMode(of: file.raw, privateFileMode)
            } catch {
                try? Syscall.unlinkEntry(name, in: directory)
                throw error.vaultError("setting the temporary file's mode to 0600", path: path)
            }
            return file
        }
    }

    /// Writes `contents`, fsyncs and closes, checking every step.
    private static func fillAndClose(_ file: consuming OwnedDescriptor, with contents: [UInt8], path: String,
                                     synchronize: Bool) throws(VaultError) {
        do {
            try Syscall.writeAll(file.raw, contents[...])
        } catch {
            throw error.vaultError("writing the new contents", path: path)
        }
        do {
            if synchronize { try Syscall.synchronize(file.raw) }
        } catch {
            throw error.vaultError("syncing the new contents to disk", path: path)
        }
        do {
            try file.close()
        } catch {
            throw error.vaultError("closing the new file", path: path)
        }
    }

    /// Throws when `name` in `directory` is a symbolic link; a missing entry is fine.
    private static func refuseSymbolicLink(_ name: String, in directory: Int32, path: String) throws(VaultError) {
        let status: stat
        do {
            status = try Syscall.linkStatus(name, in: directory)
        } catch {
            if error.code == ENOENT { return }
            throw error.vaultError("checking the file before replacing it", path: path)
        }
        if status.st_mode & PrivacyCheck.typeMask == PrivacyCheck.symbolicLink { throw .symbolicLink(path) }
    }
}
