import FoundationEssentials

extension SecretStore {
    /// Destroys the vault in `directory` without opening it, so that a vault whose
    /// passphrase is lost can still be destroyed: under the vault lock, overwrites the
    /// vault file (and with it the wrapped data key) with zeros, removes it and leftover
    /// temporary files. The lock file stays: deleting a lock file that another process
    /// may be waiting on would let two processes hold "the" lock at once.
    ///
    /// What this cannot do: every earlier generation of the vault was a separate file,
    /// replaced by rename, whose blocks the file system freed but did not erase; copy-on-write
    /// file systems, journals, snapshots and SSD remapping keep more. Those copies still open
    /// with the passphrase or key file. Only destroying the key file (`destroyKeyFile(at:)`)
    /// makes them undecryptable; a passphrase cannot be destroyed.
    /// - Parameters:
    ///   - directory: the vault directory.
    ///   - lockTimeout: how long to wait for another process's lock.
    /// - Returns: false when there was no vault file (nothing was done).
    /// - Throws: `.busy`, `.insecurePermissions` for an unsafe folder, lock file or vault file
    ///   (symlink, hard links, group/other access), `.io`.
    @discardableResult
    public static func wipe(in directory: String, lockTimeout: Duration = .seconds(10)) throws -> Bool {
        let lockPath = PathText.joining(directory, FileNames.lock)
        let vaultPath = PathText.joining(directory, FileNames.vault)
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

    /// Overwrites a key file with zeros and removes it: the one erase that holds, because
    /// every copy of every vault it opened, including earlier generations left in freed disk
    /// blocks, backups and snapshots, becomes undecryptable (the key file's bytes are the only
    /// way to unwrap their data keys). The key file's own old blocks are subject to the same
    /// limits as any overwrite, but a key file is written once and never replaced.
    ///
    /// The same checks as reading a key file, and more, before anything is written: no
    /// symlink; a regular file owned by the effective user, mode without group/other bits,
    /// exactly one link (a second name would be zeroed too); exactly 32 bytes; its folder and
    /// every folder above it owned by root or the user and not writable by others unless sticky.
    /// - Parameter path: the key file.
    /// - Throws: `.notFound`, `.insecurePermissions`, `.invalidKey` (not 32 bytes), `.io`.
    public static func destroyKeyFile(at path: String) throws {
        try SecureFileSystem.overwriteAndRemoveKeyFile(path, size: VaultKey.keyMaterialByteCount)
    }
}
