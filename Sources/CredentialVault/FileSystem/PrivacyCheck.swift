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

    /// `S_ISVTX`: in a sticky directory only an entry's owner can rename or remove it.
    static let sticky: mode_t = 0o1000
    /// Group and other write bits.
    static let groupOrOtherWrite: mode_t = 0o022

    /// Requires a directory above the vault directory that no other user can rearrange:
    /// owned by root or the effective user, and not writable by group or others unless the
    /// sticky bit is set (OpenSSH's StrictModes, with `/tmp`-style sticky folders allowed).
    /// - Throws: `VaultError` `.insecurePermissions`.
    static func requireTrustedAncestor(_ status: stat, path: String) throws(VaultError) {
        guard status.st_uid == 0 || status.st_uid == geteuid() else {
            throw .untrustedAncestor(path, reason: "it is owned by uid \(status.st_uid), not by root or uid \(geteuid())",
                                     fix: "keep the vault under a directory that root or you own")
        }
        guard status.st_mode & groupOrOtherWrite == 0 || status.st_mode & sticky != 0 else {
            throw .untrustedAncestor(path, reason: "group or others can write to it and it has no sticky bit "
                                     + "(mode \(VaultError.octal(status.st_mode & 0o7777)))",
                                     fix: "run 'chmod go-w \(VaultError.shellQuoted(path))' (or 'chmod +t' for a shared "
                                     + "folder), or keep the vault somewhere else")
        }
    }

    /// Owner is the effective user and no group/other bits are set.
    private static func requireOwnedAndPrivate(_ status: stat, path: String, isDirectory: Bool) throws(VaultError) {
        guard status.st_uid == geteuid() else { throw .wrongOwner(path, owner: status.st_uid) }
        guard status.st_mode & groupAndOther == 0 else {
            throw .groupOrWorldAccess(path, mode: status.st_mode, isDirectory: isDirectory)
        }
    }
}
