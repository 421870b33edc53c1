#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import VaultCrypto

/// Key files that systemd hands a service (`LoadCredential=`, `LoadCredentialEncrypted=`), in
/// `$CREDENTIALS_DIRECTORY`.
///
/// For a service with `User=`, systemd writes the credential owned by root, mode 0400, with a POSIX
/// ACL that lets the service's user read it (so the mode shows the ACL mask as group read: 0440).
/// That is exactly the shape accepted here, and only inside `$CREDENTIALS_DIRECTORY` (directly, no
/// subfolder; the folder owned by root and writable by nobody else): owner root, no write or execute
/// bit, no "other" access, and an ACL whose only grants are to the owner and to the calling user.
/// Anywhere else a key file must be the caller's own, 0600 or stricter, as always.
extension SecureFileSystem {
    /// Reads a key file: a credential of this service (the shape above) or a private file.
    static func readKeyFile(_ path: String, maxBytes: Int) throws -> [UInt8] {
        guard isInCredentialsDirectory(path) else { return try readPrivateFile(path, maxBytes: maxBytes) }
        let bytes = try withUnfollowedFile(path, path: path, what: "the credential") { descriptor, status in
            guard status.st_mode & PrivacyCheck.typeMask == PrivacyCheck.regularFile else {
                throw VaultError.wrongFileType(path, expected: "a regular file")
            }
            guard status.st_uid == geteuid() || status.st_uid == 0 else { throw VaultError.wrongOwner(path, owner: status.st_uid) }
            guard status.st_nlink <= 1 else { throw VaultError.multipleLinks(path, count: Int(status.st_nlink)) }
            let permissions = status.st_mode & 0o7777
            guard permissions & ~mode_t(0o640) == 0, permissions & 0o040 == 0 || status.st_uid == 0 else {
                throw VaultError.groupOrWorldAccess(path, mode: permissions, isDirectory: false)
            }
            if permissions & 0o040 != 0 {
                // Group read on a root-owned credential: only as the mask of an ACL granting this user alone.
                try requireCredentialACL(descriptor, path: path)
            }
            guard Int(status.st_size) <= maxBytes else { throw VaultError.fileTooLarge(path, limit: maxBytes) }
            do throws(SyscallError) {
                return try Syscall.readAll(descriptor, expectedCount: Int(status.st_size), limit: maxBytes)
            } catch {
                throw error.vaultError("reading the credential", path: path)
            }
        }
        guard let bytes else { throw VaultError.fileNotFound(path) }
        return bytes
    }

    /// Whether `path` is directly inside `$CREDENTIALS_DIRECTORY`, and that folder is root's and
    /// writable by root alone.
    private static func isInCredentialsDirectory(_ path: String) -> Bool {
        guard let directory = ProcessEnvironment.values("CREDENTIALS_DIRECTORY")["CREDENTIALS_DIRECTORY"], !directory.isEmpty,
              let resolvedDirectory = try? Syscall.canonicalPath(directory),
              let resolvedParent = try? Syscall.canonicalPath(PathText.parent(of: path)),
              resolvedDirectory == resolvedParent else { return false }
        var status = stat()
        guard stat(resolvedDirectory, &status) == 0 else { return false }
        return (status.st_uid == 0 || status.st_uid == geteuid()) && status.st_mode & 0o022 == 0
    }

    /// Requires the file's access ACL to grant read to its owner and to this user only, nothing to
    /// its group, other groups or others, and write or execute to nobody.
    private static func requireCredentialACL(_ descriptor: Int32, path: String) throws {
        let bytes = FileAttributes.accessACL(of: descriptor) ?? []
        let count = bytes.count
        let refuse = VaultError(.insecurePermissions, "the credential's group can read it, and no ACL limits that to this user",
                                path: path, fix: "give the key file mode 0400 (systemd's LoadCredential= does so)")
        guard count >= 4, (count - 4) % 8 == 0 else { throw refuse }
        func little16(_ offset: Int) -> UInt16 { UInt16(bytes[offset]) | UInt16(bytes[offset + 1]) << 8 }
        func little32(_ offset: Int) -> UInt32 {
            UInt32(bytes[offset]) | UInt32(bytes[offset + 1]) << 8 | UInt32(bytes[offset + 2]) << 16 | UInt32(bytes[offset + 3]) << 24
        }
        guard little32(0) == 2 else { throw refuse }
        let me = geteuid()
        for offset in stride(from: 4, to: count, by: 8) {
            let tag = little16(offset), permissions = little16(offset + 2), id = little32(offset + 4)
            guard permissions & 0o3 == 0 else { throw refuse }   // no write, no execute for anyone
            switch tag {
            case 0x01, 0x10: continue                           // the owner; the mask
            case 0x02: guard id == me || permissions == 0 else { throw refuse }   // a named user: this one only
            case 0x04, 0x08, 0x20: guard permissions == 0 else { throw refuse }   // group, named groups, others
            default: throw refuse
            }
        }
    }
}
