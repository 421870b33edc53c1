#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import VaultCrypto

/// A private folder of secret files for one `vault exec --file` run, removed when the run ends.
///
/// Where: `$XDG_RUNTIME_DIR/vault-exec/` (a per-user tmpfs on systemd machines), else
/// `$TMPDIR/vault-exec-<uid>/` (`/tmp` without `TMPDIR`); that base folder must be the user's own,
/// mode 0700, with safe parents (the checks of the vault folder), and is created so. Each run makes
/// `new-<16 hex>/` (0700) in it, takes an exclusive `flock` on its `.lock` file, renames it
/// `run-<16 hex>/` and holds the lock while it lives. A run whose vault was killed (SIGKILL: no chance to clean up) leaves its folder with the
/// lock released, and the next `create` removes it: the lock, unlike a PID, cannot be reused.
package final class ProgramSecretFolder {
    /// The run's folder.
    package let path: String
    private let lockDescriptor: Int32
    private var files: [String] = []
    private var removed = false

    private static let lockName = ".lock"
    private static let runPrefix = "run-"
    private static let newPrefix = "new-"

    private init(path: String, lockDescriptor: Int32) {
        self.path = path
        self.lockDescriptor = lockDescriptor
    }

    deinit {
        remove()
    }

    /// The base folder for this user, from the environment.
    package static func baseFolder(environment: [String: String] = ProcessEnvironment.values("XDG_RUNTIME_DIR", "TMPDIR")) -> String {
        if let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty {
            return PathText.joining(runtime, "vault-exec")
        }
        return PathText.joining(PathText.temporaryDirectory(environment: environment), "vault-exec-\(geteuid())")
    }

    /// Removes the folders of runs that ended without cleaning up, then makes a new run folder.
    /// - Throws: `VaultError` `.insecurePermissions` when the base folder is unsafe, `.io`.
    package static func create(environment: [String: String] = ProcessEnvironment.values("XDG_RUNTIME_DIR", "TMPDIR"))
        throws -> ProgramSecretFolder {
        let base = baseFolder(environment: environment)
        try SecureFileSystem.ensurePrivateDirectory(base, create: true)
        removeLeftovers(in: base)
        var random: [UInt8]
        do {
            random = try SecureRandom.bytes(count: 8)
        } catch {
            throw VaultError(.io, "the random generator failed while naming a folder", path: base)
        }
        let suffix = random.map { String($0, radix: 16).leftPadded(to: 2) }.joined()
        // Made as new-<hex> and renamed to run-<hex> only once its lock is held, so a concurrent
        // run's clean-up (which looks at run-* only) never sees a folder whose lock is not yet taken.
        let staging = PathText.joining(base, newPrefix + suffix), path = PathText.joining(base, runPrefix + suffix)
        guard mkdir(staging, 0o700) == 0 else { throw VaultError.io("creating a private folder", path: staging, errno: errno) }
        let lock = open(PathText.joining(staging, lockName), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard lock >= 0 else {
            let code = errno
            _ = rmdir(staging)
            throw VaultError.io("creating the folder's lock file", path: staging, errno: code)
        }
        guard flock(lock, LOCK_EX | LOCK_NB) == 0, rename(staging, path) == 0 else {
            let code = errno
            _ = close(lock)
            removeTree(staging)
            throw VaultError.io("preparing a private folder", path: staging, errno: code)
        }
        try SecureFileSystem.checkPrivateDirectory(path)
        return ProgramSecretFolder(path: path, lockDescriptor: lock)
    }

    /// Writes `contents` to a new file `name` (0600) in the folder.
    /// - Returns: the file's path.
    package func write(_ name: String, contents: SecureBytes) throws -> String {
        let file = PathText.joining(path, name)
        let descriptor = open(file, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw VaultError.io("creating a file for the command", path: file, errno: errno) }
        files.append(name)
        let owned = OwnedDescriptor(descriptor)
        var bytes = contents.withUnsafeBytes { [UInt8]($0) }
        defer { SecureWipe.wipe(&bytes) }
        do {
            try Syscall.writeAll(owned.raw, bytes[...])
        } catch {
            throw error.vaultError("writing a file for the command", path: file)
        }
        return file
    }

    /// Removes the files and the folder; also done when the value is released.
    package func remove() {
        guard !removed else { return }
        removed = true
        Self.removeTree(path)
        _ = close(lockDescriptor)
    }

    /// Removes a folder and everything in it (the command may have made subfolders), by
    /// descriptor and without following symlinks; bounded in depth.
    private static func removeTree(_ folder: String) {
        guard let directory = try? Syscall.openFile(folder, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) else { return }
        removeContents(of: directory, depth: 0)
        _ = close(directory)
        _ = rmdir(folder)
    }

    private static func removeContents(of directory: Int32, depth: Int) {
        for entry in (try? Syscall.entries(of: directory)) ?? [] {
            if unlinkat(directory, entry, 0) == 0 { continue }
            guard errno == EISDIR || errno == EPERM, depth < 32,
                  let child = try? Syscall.openFile(entry, in: directory, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) else { continue }
            removeContents(of: child, depth: depth + 1)
            _ = close(child)
            _ = unlinkat(directory, entry, AT_REMOVEDIR)
        }
    }

    /// Removes what runs killed before they could clean up left in the base folder, if there is
    /// one (it is not made here): every `vault exec` calls it, `--file` or not.
    package static func removeLeftovers(environment: [String: String] = ProcessEnvironment.values("XDG_RUNTIME_DIR", "TMPDIR")) {
        let base = baseFolder(environment: environment)
        guard (try? SecureFileSystem.checkPrivateDirectory(base)) != nil else { return }
        removeLeftovers(in: base)
    }

    /// Removes the run folders in `base` whose lock nobody holds.
    private static func removeLeftovers(in base: String) {
        guard let directory = try? Syscall.openFile(base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) else { return }
        defer { _ = close(directory) }
        for entry in (try? Syscall.entries(of: directory)) ?? [] {
            let folder = PathText.joining(base, entry)
            if entry.hasPrefix(newPrefix) {
                // A run killed before its folder was ready: left alone while young (it may be starting now).
                guard let status = try? Syscall.linkStatus(folder), time(nil) - status.st_mtim.tv_sec > 60 else { continue }
                removeTree(folder)
                continue
            }
            guard entry.hasPrefix(runPrefix) else { continue }
            let lock = open(PathText.joining(folder, lockName), O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
            guard lock >= 0 else {
                // A run folder always has its lock file; without one it is debris.
                removeTree(folder)
                continue
            }
            defer { _ = close(lock) }
            guard flock(lock, LOCK_EX | LOCK_NB) == 0 else { continue }
            removeTree(folder)
        }
    }
}

extension String {
    fileprivate func leftPadded(to length: Int) -> String {
        String(repeating: "0", count: max(0, length - count)) + self
    }
}
