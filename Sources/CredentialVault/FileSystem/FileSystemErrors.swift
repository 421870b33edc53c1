#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The errors of the file layer, each naming the path and a command that fixes it.
extension VaultError {
    /// `path` does not exist.
    static func fileNotFound(_ path: String, isDirectory: Bool = false) -> VaultError {
        VaultError(.notFound, isDirectory ? "the directory does not exist" : "the file does not exist", path: path,
                   fix: "check the path")
    }

    /// `path` is a symbolic link where a real file or directory is required.
    static func symbolicLink(_ path: String) -> VaultError {
        VaultError(.insecurePermissions, "refusing the path because it is a symbolic link", path: path,
                   fix: "replace the link with the real file or directory, or use the real path")
    }

    /// `path` is not of the kind required (a directory where a file belongs, a FIFO, ...).
    static func wrongFileType(_ path: String, expected: String) -> VaultError {
        VaultError(.insecurePermissions, "refusing the path because it is not \(expected)", path: path,
                   fix: "move it aside so a new \(expected) can take its place")
    }

    /// `path` belongs to another user.
    static func wrongOwner(_ path: String, owner: uid_t) -> VaultError {
        let me = geteuid()
        return VaultError(.insecurePermissions, "refusing the path because it is owned by uid \(owner), not by uid \(me)",
                          path: path, fix: "run 'chown \(me) \(shellQuoted(path))' or use the account that owns it")
    }

    /// `path` grants access to group or others.
    static func groupOrWorldAccess(_ path: String, mode: mode_t, isDirectory: Bool) -> VaultError {
        let wanted = isDirectory ? "700" : "600"
        return VaultError(.insecurePermissions,
                          "refusing the path because group or others have access (mode \(octal(mode & 0o7777)))",
                          path: path, fix: "run 'chmod \(wanted) \(shellQuoted(path))'")
    }

    /// `path` has more than one hard link, so its bytes are reachable under another name.
    static func multipleLinks(_ path: String, count: Int) -> VaultError {
        VaultError(.insecurePermissions, "refusing the file because it has \(count) hard links", path: path,
                   fix: "remove the other links (find them with 'find / -xdev -samefile \(shellQuoted(path))')")
    }

    /// A directory above the vault directory lets another user swap what it contains.
    static func untrustedAncestor(_ path: String, reason: String, fix: String) -> VaultError {
        VaultError(.insecurePermissions, "refusing the vault because a directory above it is unsafe: \(reason)",
                   path: path, fix: fix)
    }

    /// `path` is larger than the caller allows.
    static func fileTooLarge(_ path: String, limit: Int) -> VaultError {
        VaultError(.corrupt, "file larger than \(limit) bytes", path: path,
                   fix: "check that this is the right file; it is too large to be one the vault wrote")
    }

    /// `path` quoted for a POSIX shell when it holds anything beyond plain characters.
    package static func shellQuoted(_ path: String) -> String {
        let plain = path.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "/"), UInt8(ascii: "."),
                 UInt8(ascii: "_"), UInt8(ascii: "-"), UInt8(ascii: "+"), UInt8(ascii: ","),
                 UInt8(ascii: ":"), UInt8(ascii: "@"), UInt8(ascii: "%"), UInt8(ascii: "="):
                return true
            default:
                return false
            }
        }
        if plain && !path.isEmpty { return path }
        var quoted = "'"
        for character in path {
            quoted += character == "'" ? "'\\''" : String(character)
        }
        return quoted + "'"
    }

    /// "0640".
    static func octal(_ mode: mode_t) -> String {
        let digits = String(mode, radix: 8)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}
