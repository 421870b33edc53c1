import Foundation

extension SecretStore {
    /// Crypto-shreds the vault in `directory` without opening it, so that a vault whose
    /// passphrase is lost can still be destroyed: under the vault lock, overwrites the
    /// vault file (and with it the wrapped data key) with zeros, removes it and leftover
    /// temporary files. The lock file stays: deleting a lock file that another process
    /// may be waiting on would let two processes hold "the" lock at once.
    /// - Parameters:
    ///   - directory: the vault directory.
    ///   - lockTimeout: how long to wait for another process's lock.
    /// - Returns: false when there was no vault file (nothing was done).
    /// - Throws: `.busy`, `.insecurePermissions` for an unsafe folder, lock file or vault file
    ///   (symlink, hard links, group/other access), `.io`.
    @discardableResult
    public static func wipe(in directory: String, lockTimeout: Duration = .seconds(10)) throws -> Bool {
        let lockPath = (directory as NSString).appendingPathComponent(FileNames.lock)
        let vaultPath = (directory as NSString).appendingPathComponent(FileNames.vault)
        guard SecureFileSystem.exists(vaultPath) else { return false }
        // The same folder checks as every other command: a vault in a folder others can
        // write to, or below an unsafe ancestor, is refused rather than overwritten.
        try SecureFileSystem.checkPrivateDirectory(directory)
        let lock = try FileLock.acquire(path: lockPath, mode: .exclusive, timeout: lockTimeout)
        defer { lock.release() }
        SecureFileSystem.removeStaleTemporaryFiles(in: directory, for: FileNames.vault)
        try SecureFileSystem.overwriteAndRemove(vaultPath)
        return true
    }
}
