#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension SecureFileSystem {
    /// Creates `path` (and missing parents) with mode 0700 regardless of the umask, or
    /// checks the existing one.
    ///
    /// An existing directory is never repaired, only checked: it must be a real directory
    /// (not a symlink), owned by the effective user, with no group/other bits.
    /// - Parameters:
    ///   - path: the directory.
    ///   - create: create it (and missing parents, each 0700) when it is missing.
    /// - Throws: `VaultError` `.insecurePermissions` (with a chmod/chown fix), `.notFound`
    ///   when missing and `create` is false, `.io` for other system errors.
    static func ensurePrivateDirectory(_ path: String, create: Bool) throws {
        if create { try createMissingDirectories(path) }
        try checkPrivateDirectory(path)
    }

    /// Checks an existing directory: real directory, owned by the effective user, mode
    /// without group/other bits.
    /// - Throws: `VaultError` `.notFound` when missing, `.insecurePermissions` when unsafe,
    ///   `.io` for other system errors.
    static func checkPrivateDirectory(_ path: String) throws {
        guard !path.isEmpty else {
            throw VaultError(.invalidInput, "the directory path is empty", path: path, fix: "pass a directory path")
        }
        let descriptor: OwnedDescriptor
        do {
            // O_NOFOLLOW refuses a symlink as the last component; fstat then checks
            // the very directory we opened, not whatever the path names a moment later.
            descriptor = OwnedDescriptor(try Syscall.openFile(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC))
        } catch {
            switch error.code {
            case ENOENT: throw VaultError.fileNotFound(path, isDirectory: true)
            case ELOOP: throw VaultError.symbolicLink(path)
            case ENOTDIR:
                // Either the path is not a directory, or one of its parents is not.
                if let status = try? Syscall.linkStatus(path) {
                    if status.st_mode & PrivacyCheck.typeMask == PrivacyCheck.symbolicLink {
                        throw VaultError.symbolicLink(path)
                    }
                    throw VaultError.wrongFileType(path, expected: "a directory")
                }
                throw VaultError.fileNotFound(path, isDirectory: true)
            default: throw error.vaultError("opening the directory", path: path)
            }
        }
        let status: stat
        do {
            status = try Syscall.status(of: descriptor.raw)
        } catch {
            throw error.vaultError("checking the directory", path: path)
        }
        try PrivacyCheck.requirePrivateDirectory(status, path: path)
    }

    /// `mkdir -p` with mode 0700 for every directory it creates; existing ones are left
    /// alone (the last one is checked by the caller).
    private static func createMissingDirectories(_ path: String) throws {
        guard !path.isEmpty else {
            throw VaultError(.invalidInput, "the directory path is empty", path: path, fix: "pass a directory path")
        }
        var prefixes = [String]()
        var current = path.hasPrefix("/") ? "/" : ""
        for component in path.split(separator: "/", omittingEmptySubsequences: true) {
            current += current.isEmpty || current.hasSuffix("/") ? String(component) : "/" + component
            prefixes.append(current)
        }
        // Only missing components are created: mkdir on an existing parent we may not
        // write to (/home) can fail with EACCES instead of EEXIST.
        for prefix in prefixes where !exists(prefix) {
            do {
                try Syscall.makeDirectory(prefix, mode: privateDirectoryMode)
            } catch {
                if error.code == EEXIST { continue }
                throw error.vaultError("creating the directory", path: prefix)
            }
            // mkdir's mode is filtered by the umask; chmod is not. A swap to a symlink in
            // this window is caught by the O_NOFOLLOW check of the last component.
            do {
                try Syscall.setMode(of: prefix, privateDirectoryMode)
            } catch {
                throw error.vaultError("setting the directory mode to 0700", path: prefix)
            }
        }
    }
}
