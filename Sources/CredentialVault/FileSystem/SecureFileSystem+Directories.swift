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
    /// (not a symlink), owned by the effective user, with no group/other bits, and every
    /// directory above it must be safe (see `openPrivateDirectory`).
    /// - Parameters:
    ///   - path: the directory.
    ///   - create: create it (and missing parents, each 0700) when it is missing.
    /// - Throws: `VaultError` `.insecurePermissions` (with a chmod/chown fix), `.notFound`
    ///   when missing and `create` is false, `.io` for other system errors.
    static func ensurePrivateDirectory(_ path: String, create: Bool) throws {
        _ = try openPrivateDirectory(path, create: create)
    }

    /// Checks an existing directory: real directory, owned by the effective user, mode
    /// without group/other bits, safe ancestors.
    /// - Throws: `VaultError` `.notFound` when missing, `.insecurePermissions` when unsafe,
    ///   `.io` for other system errors.
    static func checkPrivateDirectory(_ path: String) throws {
        _ = try openPrivateDirectory(path, create: false)
    }

    /// Opens the private directory `path`, creating missing components when `create` is set,
    /// without ever following a symlink that could have been swapped in.
    ///
    /// The existing part of the parent path is resolved once with `realpath(3)` (so a home
    /// directory reached through a symlink works); from there the walk starts at "/" and
    /// descends one component at a time with `openat(O_DIRECTORY|O_NOFOLLOW)`. A missing
    /// component is made with `mkdirat` 0700, opened again with `O_NOFOLLOW` and fixed up with
    /// `fchmod` on the descriptor, so nothing is ever changed by path. A symlink appearing
    /// on the way (swapped in after `realpath`) is refused.
    ///
    /// Every directory above the vault directory must be owned by root or the effective user
    /// and must not be writable by group or others unless its sticky bit is set (as `/tmp`
    /// is), the rule OpenSSH's StrictModes applies: anyone who can rename entries in an
    /// ancestor could otherwise swap the vault directory.
    /// - Returns: the open vault directory.
    /// - Throws: `VaultError` `.insecurePermissions`, `.notFound`, `.invalidInput`, `.io`.
    static func openPrivateDirectory(_ path: String, create: Bool) throws(VaultError) -> OwnedDescriptor {
        try openDirectory(path, create: create, requirePrivate: true)
    }

    /// Opens an existing directory the way `openPrivateDirectory` does, but requires of the
    /// directory itself only what it requires of an ancestor (owned by root or the effective
    /// user, not writable by others unless sticky): for a key file kept in a home folder.
    /// - Throws: `VaultError` `.insecurePermissions`, `.notFound`, `.invalidInput`, `.io`.
    static func openTrustedDirectory(_ path: String) throws(VaultError) -> OwnedDescriptor {
        try openDirectory(path, create: false, requirePrivate: false)
    }

    private static func openDirectory(_ path: String, create: Bool, requirePrivate: Bool) throws(VaultError) -> OwnedDescriptor {
        let walk = try componentsToWalk(path)
        var current: OwnedDescriptor
        do {
            current = OwnedDescriptor(try Syscall.openFile("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC))
        } catch {
            throw error.vaultError("opening the root directory", path: path)
        }
        var currentPath = "/"
        for (index, name) in walk.enumerated() {
            try requireTrustedAncestor(current.raw, path: currentPath)
            let childPath = currentPath == "/" ? "/" + name : currentPath + "/" + name
            let isLast = index == walk.count - 1
            current = try openChild(name, in: current.raw, childPath: childPath, reportedPath: isLast ? path : childPath,
                                    create: create, isLast: isLast)
            currentPath = childPath
        }
        let status: stat
        do {
            status = try Syscall.status(of: current.raw)
        } catch {
            throw error.vaultError("checking the directory", path: path)
        }
        if requirePrivate {
            try PrivacyCheck.requirePrivateDirectory(status, path: path)
        } else {
            guard status.st_mode & PrivacyCheck.typeMask == PrivacyCheck.directory else {
                throw VaultError.wrongFileType(path, expected: "a directory")
            }
            try PrivacyCheck.requireTrustedAncestor(status, path: path)
        }
        return current
    }

    /// The components from "/" to the vault directory: the canonical form of the longest
    /// existing parent, then the rest of `path` as written. The last component is never
    /// resolved, so a symlink there is refused rather than followed.
    private static func componentsToWalk(_ path: String) throws(VaultError) -> [String] {
        guard !path.isEmpty else {
            throw VaultError(.invalidInput, "the directory path is empty", path: path, fix: "pass a directory path")
        }
        let components = path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        let lastIsName = components.last.map { $0 != "." && $0 != ".." } ?? false
        let resolvable = lastIsName ? Array(components.dropLast()) : components
        let tail = lastIsName ? Array(components.suffix(1)) : []
        let base = path.hasPrefix("/") ? "/" : ""
        var existing = resolvable.count
        var canonical: String?
        while canonical == nil {
            let prefix = base + resolvable[0..<existing].joined(separator: "/")
            do {
                canonical = try Syscall.canonicalPath(prefix.isEmpty ? "." : prefix)
            } catch {
                guard (error.code == ENOENT || error.code == ENOTDIR) && existing > 0 else {
                    throw error.vaultError("resolving the directory", path: prefix.isEmpty ? "." : prefix)
                }
                existing -= 1
            }
        }
        var walk = (canonical ?? "/").split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        for name in resolvable[existing...] + tail where name != "." {
            guard name != ".." else {
                throw VaultError(.invalidInput, "the directory path goes up ('..') through a directory that does not exist",
                                 path: path, fix: "pass the path without '..'")
            }
            walk.append(name)
        }
        return walk
    }

    /// Opens (creating when missing and allowed) the directory `name` inside `directory`.
    private static func openChild(_ name: String, in directory: Int32, childPath: String, reportedPath: String,
                                  create: Bool, isLast: Bool) throws(VaultError) -> OwnedDescriptor {
        var created = false
        while true {
            let raw: Int32
            do {
                raw = try Syscall.openFile(name, in: directory, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            } catch {
                switch error.code {
                case ENOENT where create && !created:
                    do {
                        try Syscall.makeDirectory(name, in: directory, mode: privateDirectoryMode)
                        created = true
                    } catch {
                        // Someone else made it first: open and check theirs, never chmod it.
                        if error.code != EEXIST { throw error.vaultError("creating the directory", path: childPath) }
                    }
                    continue
                case ENOENT:
                    throw VaultError.fileNotFound(created ? childPath : reportedPath, isDirectory: true)
                case ELOOP:
                    throw VaultError.symbolicLink(reportedPath)
                case ENOTDIR:
                    if let status = try? Syscall.linkStatus(name, in: directory) {
                        if status.st_mode & PrivacyCheck.typeMask == PrivacyCheck.symbolicLink {
                            throw VaultError.symbolicLink(reportedPath)
                        }
                        if isLast { throw VaultError.wrongFileType(reportedPath, expected: "a directory") }
                    }
                    throw error.vaultError("opening the directory", path: childPath)
                default:
                    throw error.vaultError(created ? "opening the new directory" : "opening the directory", path: childPath)
                }
            }
            let child = OwnedDescriptor(raw)
            if created { try fixUpCreatedDirectory(child.raw, path: childPath) }
            return child
        }
    }

    /// Gives a directory this call just created mode 0700 through its descriptor (mkdir's
    /// mode is filtered by the umask; fchmod is not), after checking it is ours.
    private static func fixUpCreatedDirectory(_ descriptor: Int32, path: String) throws(VaultError) {
        let status: stat
        do {
            status = try Syscall.status(of: descriptor)
        } catch {
            throw error.vaultError("checking the new directory", path: path)
        }
        guard status.st_uid == geteuid() else { throw VaultError.wrongOwner(path, owner: status.st_uid) }
        do {
            try Syscall.setMode(of: descriptor, privateDirectoryMode)
        } catch {
            throw error.vaultError("setting the directory mode to 0700", path: path)
        }
    }

    /// An ancestor of the vault directory: owned by root or the effective user, and not
    /// writable by group or others unless the sticky bit is set.
    private static func requireTrustedAncestor(_ descriptor: Int32, path: String) throws(VaultError) {
        let status: stat
        do {
            status = try Syscall.status(of: descriptor)
        } catch {
            throw error.vaultError("checking a parent directory", path: path)
        }
        try PrivacyCheck.requireTrustedAncestor(status, path: path)
    }
}
