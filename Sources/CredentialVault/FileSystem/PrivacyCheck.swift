#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The OpenSSH-style rules for files and directories that hold secrets, applied to a
/// `stat` taken from an open descriptor (so the checked object is the one being used).
enum PrivacyCheck {
    /// File-type bits of `st_mode`.
    static let typeMask: mode_t = 0o170000
    /// `S_IFREG`.
    static let regularFile: mode_t = 0o100000
    /// `S_IFDIR`.
    static let directory: mode_t = 0o040000
    /// `S_IFLNK`.
    static let symbolicLink: mode_t = 0o120000
    /// Group and other permission bits; none may be set.
    static let groupAndOther: mode_t = 0o077

    /// Requires a regular file owned by the effective user, without group/other bits,
    /// with at most one link.
    ///
    /// Zero links is allowed: a writer renamed a new file over the path after we opened it
    /// (readers take no lock), so we hold the complete old version, reachable under no name.
    /// - Throws: `VaultError` `.insecurePermissions` naming the first rule broken.
    static func requirePrivateFile(_ status: stat, path: String) throws(VaultError) {
        guard status.st_mode & typeMask == regularFile else {
            throw .wrongFileType(path, expected: "a regular file")
        }
        try requireOwnedAndPrivate(status, path: path, isDirectory: false)
        guard status.st_nlink <= 1 else { throw .multipleLinks(path, count: Int(status.st_nlink)) }
    }

    /// Requires a directory owned by the effective user without group/other bits.
    /// - Throws: `VaultError` `.insecurePermissions` naming the first rule broken.
    static func requirePrivateDirectory(_ status: stat, path: String) throws(VaultError) {
        guard status.st_mode & typeMask == directory else {
            throw .wrongFileType(path, expected: "a directory")
        }
        try requireOwnedAndPrivate(status, path: path, isDirectory: true)
    }

    /// Requires a regular file owned by the effective user (mode and links not checked).
    /// - Throws: `VaultError` `.insecurePermissions`.
    static func requireOwnedRegularFile(_ status: stat, path: String) throws(VaultError) {
        guard status.st_mode & typeMask == regularFile else {
            throw .wrongFileType(path, expected: "a regular file")
        }
        guard status.st_uid == geteuid() else { throw .wrongOwner(path, owner: status.st_uid) }
    }

    /// Owner is the effective user and no group/other bits are set.
    private static func requireOwnedAndPrivate(_ status: stat, path: String, isDirectory: Bool) throws(VaultError) {
        guard status.st_uid == geteuid() else { throw .wrongOwner(path, owner: status.st_uid) }
        guard status.st_mode & groupAndOther == 0 else {
            throw .groupOrWorldAccess(path, mode: status.st_mode, isDirectory: isDirectory)
        }
    }
}
