#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Files that decide what a program lets others do (the agent's rules), checked the way OpenSSH's
/// StrictModes checks `authorized_keys`: whoever can change such a file, or rename it or a folder
/// above it, decides in the user's place.
extension SecureFileSystem {
    /// Reads a configuration file after checking it and every folder above it.
    ///
    /// The folders are walked from "/" with `O_NOFOLLOW` as `openTrustedDirectory` does (each owned
    /// by root or the effective user, not writable by group or others unless sticky); the file's own
    /// folder must not be a symlink and not be writable by group or others even when sticky (they
    /// could create the file there); the file is opened in its folder with
    /// `O_NOFOLLOW|O_NONBLOCK` (a symlink is refused, a FIFO cannot hang the read) and checked with
    /// `fstat`: a regular file, owned by the effective user or root, not writable by group or others.
    /// - Returns: the contents, or nil when the file (or its folder) does not exist.
    /// - Throws: `VaultError` `.insecurePermissions` for a symlink or an unsafe file or folder,
    ///   `.invalidInput` when larger than `maxBytes`, `.io`.
    package static func readConfigurationFile(_ path: String, maxBytes: Int) throws -> [UInt8]? {
        let parts = try SplitPath(path)
        let folder: OwnedDescriptor
        do {
            folder = try openTrustedDirectory(parts.directory)
        } catch {
            if error.code == .notFound { return nil }
            throw unsafeFolder(error)
        }
        try requireUnsharedFolder(folder.raw, path: parts.directory)
        return try withUnfollowedFile(parts.name, in: folder.raw, path: path, what: "the file") { descriptor, status in
            guard status.st_mode & PrivacyCheck.typeMask == PrivacyCheck.regularFile else {
                throw VaultError.wrongFileType(path, expected: "a regular file")
            }
            guard status.st_uid == geteuid() || status.st_uid == 0 else { throw VaultError.wrongOwner(path, owner: status.st_uid) }
            guard status.st_mode & PrivacyCheck.groupOrOtherWrite == 0 else {
                throw VaultError(.insecurePermissions, "refusing the file because group or others can write to it "
                                 + "(mode \(VaultError.octal(status.st_mode & 0o7777)))",
                                 path: path, fix: "run 'chmod go-w \(VaultError.shellQuoted(path))'")
            }
            guard Int(status.st_size) <= maxBytes else {
                throw VaultError(.invalidInput, "the file is larger than \(maxBytes) bytes", path: path, fix: "check that this is the right file")
            }
            do throws(SyscallError) {
                return try Syscall.readAll(descriptor, expectedCount: Int(status.st_size), limit: maxBytes)
            } catch {
                throw error.vaultError("reading the file", path: path)
            }
        }
    }

    /// The file's own folder: writable by nobody but its owner, sticky or not. In a sticky folder
    /// others cannot replace the file, but can create it first (or again, once it is gone), and a
    /// file of theirs stops the agent or refuses every entry request.
    private static func requireUnsharedFolder(_ descriptor: Int32, path: String) throws {
        let status: stat
        do {
            status = try Syscall.status(of: descriptor)
        } catch {
            throw error.vaultError("checking the folder", path: path)
        }
        guard status.st_mode & PrivacyCheck.groupOrOtherWrite == 0 else {
            throw VaultError(.insecurePermissions, "refusing the file because group or others can create files in its folder "
                             + "(mode \(VaultError.octal(status.st_mode & 0o7777)))",
                             path: path, fix: "run 'chmod go-w \(VaultError.shellQuoted(path))', or keep the file in a folder only you can write to")
        }
    }

    /// The walk's error for a folder others can rearrange, in words about a configuration file
    /// (the walk's own speak of a vault); other errors as they are.
    private static func unsafeFolder(_ error: VaultError) -> VaultError {
        guard error.code == .insecurePermissions, let folder = error.path, let status = try? Syscall.linkStatus(folder),
              status.st_mode & PrivacyCheck.typeMask == PrivacyCheck.directory,
              (try? PrivacyCheck.requireTrustedAncestor(status, path: folder)) == nil else { return error }
        return VaultError(.insecurePermissions, "refusing the file because a folder above it can be changed by another user "
                          + "(owner uid \(status.st_uid), mode \(VaultError.octal(status.st_mode & 0o7777)))",
                          path: folder, fix: "make the folder yours or root's and run 'chmod go-w \(VaultError.shellQuoted(folder))'")
    }
}
