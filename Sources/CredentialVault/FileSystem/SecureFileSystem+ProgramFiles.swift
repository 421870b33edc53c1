#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import VaultCrypto

/// Files the CLI reads for a user or writes for another program: a `.env` file, a template, an
/// export to import, and the output of `vault inject`.
extension SecureFileSystem {
    /// Reads a file the user names as input. Symlinks are followed (it is the user's own choice
    /// of file); it must be a regular file (a FIFO would hang the read) of at most `maxBytes`.
    /// - Throws: `VaultError` `.notFound`, `.invalidInput` (not a regular file), `.corrupt` (too
    ///   large), `.io`.
    package static func readInputFile(_ path: String, maxBytes: Int) throws -> [UInt8] {
        let descriptor: OwnedDescriptor
        do {
            descriptor = OwnedDescriptor(try Syscall.openFile(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK))
        } catch {
            if error.code == ENOENT { throw VaultError.fileNotFound(path) }
            throw error.vaultError("opening the file", path: path)
        }
        let status: stat
        do {
            status = try Syscall.status(of: descriptor.raw)
        } catch {
            throw error.vaultError("checking the file", path: path)
        }
        guard status.st_mode & PrivacyCheck.typeMask == PrivacyCheck.regularFile else {
            throw VaultError(.invalidInput, "\(TerminalText.escaped(path)) is not a regular file", path: path,
                             fix: "give the path of a file")
        }
        guard Int(status.st_size) <= maxBytes else { throw inputTooLarge(path, limit: maxBytes) }
        do {
            return try Syscall.readAll(descriptor.raw, expectedCount: Int(status.st_size), limit: maxBytes)
        } catch {
            if error.code == EFBIG { throw inputTooLarge(path, limit: maxBytes) }
            throw error.vaultError("reading the file", path: path)
        }
    }

    /// Writes a file that holds secrets for another program (`vault inject -o`): mode 0600,
    /// atomically (a temporary file, fsync, rename, fsync of the folder), so a reader sees the old
    /// file or the whole new one and an error leaves nothing behind.
    ///
    /// Refused when `path` is a symlink or not a regular file, and when its folder is writable by
    /// group or others (sticky or not) or owned by another user than root or the caller: whoever
    /// can write to the folder could swap the file after vault wrote it.
    /// - Throws: `VaultError` `.insecurePermissions`, `.notFound` (no such folder), `.io`.
    package static func writeSecretOutput(_ path: String, contents: SecureBytes) throws {
        let parts = try SplitPath(path)
        let directory = try openParentDirectory(of: parts, path: path)
        let folder: stat
        do {
            folder = try Syscall.status(of: directory.raw)
        } catch {
            throw error.vaultError("checking the folder", path: parts.directory)
        }
        guard folder.st_uid == geteuid() || folder.st_uid == 0 else {
            throw unsafeOutputFolder(parts.directory, reason: "it belongs to another user (uid \(folder.st_uid))",
                                     fix: "write the file into a folder of your own")
        }
        guard folder.st_mode & PrivacyCheck.groupOrOtherWrite == 0 else {
            throw unsafeOutputFolder(parts.directory, reason: "others can write to it, so they could replace the file",
                                     fix: "write the file into a folder only you can write to (chmod go-w, or another folder)")
        }
        do {
            let existing = try Syscall.linkStatus(parts.name, in: directory.raw)
            if existing.st_mode & PrivacyCheck.typeMask == PrivacyCheck.symbolicLink { throw VaultError.symbolicLink(path) }
            guard existing.st_mode & PrivacyCheck.typeMask == PrivacyCheck.regularFile else {
                throw VaultError.wrongFileType(path, expected: "a regular file")
            }
        } catch let error as SyscallError {
            guard error.code == ENOENT else { throw error.vaultError("checking the file", path: path) }
        }
        var bytes = contents.withUnsafeBytes { [UInt8]($0) }
        defer { SecureWipe.wipe(&bytes) }
        try writeFileAtomically(parts.name, in: directory.raw, path: path, contents: bytes, durable: true)
    }

    private static func inputTooLarge(_ path: String, limit: Int) -> VaultError {
        VaultError(.invalidInput, "the file is larger than \(limit / (1024 * 1024)) MiB", path: path, fix: "check that this is the right file")
    }

    private static func unsafeOutputFolder(_ folder: String, reason: String, fix: String) -> VaultError {
        VaultError(.insecurePermissions, "refusing to write secrets into \(TerminalText.escaped(folder)): \(reason)",
                   path: folder, fix: fix)
    }
}
