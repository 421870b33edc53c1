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
/// `run-<16 hex>/` (0700) in it and holds an exclusive `flock` on the run's `.lock` file while it
/// lives. A run whose vault was killed (SIGKILL: no chance to clean up) leaves its folder with the
/// lock released, and the next `create` removes it: the lock, unlike a PID, cannot be reused.
package final class ProgramSecretFolder {
    /// The run's folder.
    package let path: String
    private let lockDescriptor: Int32
    private var files: [String] = []
    private var removed = false

    private static let lockName = ".lock"
    private static let runPrefix = "run-"

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
        let name = runPrefix + random.map { String($0, radix: 16).leftPadded(to: 2) }.joined()
        let path = PathText.joining(base, name)
        guard mkdir(path, 0o700) == 0 else { throw VaultError.io("creating a private folder", path: path, errno: errno) }
        let lock = open(PathText.joining(path, lockName), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard lock >= 0 else {
            let code = errno
            _ = rmdir(path)
            throw VaultError.io("creating the folder's lock file", path: path, errno: code)
        }
        guard flock(lock, LOCK_EX | LOCK_NB) == 0 else {
            let code = errno
            _ = close(lock)
            throw VaultError.io("locking the folder", path: path, errno: code)
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
        Self.removeContents(of: path)
        _ = close(lockDescriptor)
    }

    /// Removes every file of a run folder, then the folder.
    private static func removeContents(of folder: String) {
        guard let directory = try? Syscall.openFile(folder, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) else { return }
        defer { _ = close(directory) }
        for entry in (try? Syscall.entries(of: directory)) ?? [] {
            try? Syscall.unlinkEntry(entry, in: directory)
        }
        _ = rmdir(folder)
    }

    /// Removes the run folders in `base` whose lock nobody holds.
    private static func removeLeftovers(in base: String) {
        guard let directory = try? Syscall.openFile(base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) else { return }
        defer { _ = close(directory) }
        for entry in (try? Syscall.entries(of: directory)) ?? [] where entry.hasPrefix(runPrefix) {
            let folder = PathText.joining(base, entry)
            let lock = open(PathText.joining(folder, lockName), O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
            if lock < 0 {
                // No lock file: a run between mkdir and creating it, or a folder that lost it. Leave a
                // young one alone; an old one is a leftover.
                guard let status = try? Syscall.linkStatus(folder), time(nil) - status.st_mtim.tv_sec > 60 else { continue }
                removeContents(of: folder)
                continue
            }
            defer { _ = close(lock) }
            guard flock(lock, LOCK_EX | LOCK_NB) == 0 else { continue }
            removeContents(of: folder)
        }
    }
}

extension String {
    fileprivate func leftPadded(to length: Int) -> String {
        String(repeating: "0", count: max(0, length - count)) + self
    }
}
