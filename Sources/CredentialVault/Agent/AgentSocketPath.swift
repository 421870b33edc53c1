#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where the user's `vault agent` listens: `$VAULT_AGENT_SOCK`, else
/// `$XDG_RUNTIME_DIR/vault/agent.sock`; with neither set there is no agent (it does not start and
/// clients do not look for one).
///
/// The folder holding the socket must be a real folder owned by the user that nobody else can write
/// to (the agent makes `$XDG_RUNTIME_DIR/vault` 0700), and the socket path must not be a symlink:
/// otherwise another user could put their own socket where vault connects and collect what is sent.
package enum AgentSocketPath {
    /// The socket's path, from the environment; nil when neither variable is set.
    package static func resolve(environment: [String: String] = ProcessEnvironment.values("VAULT_AGENT_SOCK", "XDG_RUNTIME_DIR"))
        -> String? {
        if let explicit = environment["VAULT_AGENT_SOCK"], !explicit.isEmpty { return explicit }
        if let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty { return PathText.joining(PathText.joining(runtime, "vault"), "agent.sock") }
        return nil
    }

    /// The longest path a Unix socket address holds (`sun_path`, with its final NUL).
    package static let maximumLength = 107

    /// Checks the socket's folder (and the socket, when `socketMustExist`) before connecting or binding.
    /// - Throws: `VaultError` `.insecurePermissions` for a symlinked socket, a folder owned by another
    ///   user or writable by others; `.notFound` when the folder (or the socket) is missing;
    ///   `.invalidInput` for a path too long for a socket address.
    package static func check(_ path: String, socketMustExist: Bool) throws {
        guard path.utf8.count <= maximumLength else {
            throw VaultError(.invalidInput, "the agent socket path is longer than \(maximumLength) bytes", path: path,
                             fix: "choose a shorter path for the agent's socket")
        }
        let folder = PathText.parent(of: path)
        var status = stat()
        guard lstat(folder, &status) == 0 else {
            throw VaultError(.notFound, "the agent's folder does not exist", path: folder, fix: "start the agent")
        }
        guard status.st_mode & S_IFMT == S_IFDIR else {
            throw VaultError(.insecurePermissions, "the agent's folder is not a real folder (a symlink?)", path: folder,
                             fix: "remove it; the agent makes its folder itself")
        }
        guard status.st_uid == geteuid() else {
            throw VaultError(.insecurePermissions, "the agent's folder belongs to another user (uid \(status.st_uid))", path: folder,
                             fix: "put the agent's socket in a folder of your own, mode 0700")
        }
        guard status.st_mode & 0o022 == 0 else {
            throw VaultError(.insecurePermissions, "others can write to the agent's folder, so they could replace its socket", path: folder,
                             fix: "chmod 700 '\(folder)'")
        }
        var socketStatus = stat()
        guard lstat(path, &socketStatus) == 0 else {
            if socketMustExist {
                throw VaultError(.notFound, "no agent is listening", path: path, fix: "start the agent")
            }
            return
        }
        guard socketStatus.st_mode & S_IFMT != S_IFLNK else {
            throw VaultError(.insecurePermissions, "the agent socket is a symlink", path: path, fix: "remove it and start the agent again")
        }
        guard socketStatus.st_mode & S_IFMT == S_IFSOCK else {
            throw VaultError(.insecurePermissions, "the agent socket path is not a socket", path: path, fix: "remove it and start the agent again")
        }
        guard socketStatus.st_uid == geteuid() else {
            throw VaultError(.insecurePermissions, "the agent socket belongs to another user (uid \(socketStatus.st_uid))", path: path,
                             fix: "remove it and start your own agent")
        }
    }

    /// A Unix socket address for `path`.
    package static func address(_ path: String) -> sockaddr_un {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in path.utf8.prefix(maximumLength).enumerated() { raw[index] = byte }
        }
        return address
    }

    /// The user id of the process at the other end of a connected Unix socket (`SO_PEERCRED`).
    /// Swift's Glibc has no `struct ucred`, so its 12 bytes (pid, uid, gid) are read as they are.
    package static func peerCredentials(_ descriptor: Int32) -> (pid: Int32, uid: UInt32, gid: UInt32)? {
        var raw = (Int32(0), UInt32(0), UInt32(0))
        var length = socklen_t(MemoryLayout.size(ofValue: raw))
        guard getsockopt(descriptor, SOL_SOCKET, SO_PEERCRED, &raw, &length) == 0, length == 12 else { return nil }
        return raw
    }
}
