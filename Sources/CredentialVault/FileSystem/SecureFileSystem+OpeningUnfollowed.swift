#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension SecureFileSystem {
    /// Opens a file to read without following a symlink (`O_RDONLY|O_NOFOLLOW|O_CLOEXEC|O_NONBLOCK`:
    /// a FIFO planted at the path cannot hang the read) and `fstat`s what was opened, so every
    /// check after it is made on the file that will be read. The one way the private-file, credential
    /// and configuration-file readers open their file.
    /// - Parameters:
    ///   - name: the path, or the name inside `folder`.
    ///   - folder: a folder descriptor `name` is relative to, or nil.
    ///   - path: the whole path, for messages.
    ///   - what: what the file is, for messages ("the file", "the credential").
    ///   - body: what to do with the open file (its descriptor, closed afterwards, and its status).
    /// - Returns: what `body` returns; nil when there is no such file.
    /// - Throws: `VaultError` `.insecurePermissions` for a symlink; `.io` for any other failure; what `body` throws.
    static func withUnfollowedFile<T>(_ name: String, in folder: Int32? = nil, path: String, what: String,
                                      _ body: (Int32, stat) throws -> T) throws -> T? {
        let descriptor: OwnedDescriptor
        do {
            let flags = O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK
            if let folder {
                descriptor = OwnedDescriptor(try Syscall.openFile(name, in: folder, flags))
            } else {
                descriptor = OwnedDescriptor(try Syscall.openFile(name, flags))
            }
        } catch {
            switch error.code {
            case ENOENT: return nil
            case ELOOP: throw VaultError.symbolicLink(path)
            default: throw error.vaultError("opening \(what)", path: path)
            }
        }
        let status: stat
        do {
            status = try Syscall.status(of: descriptor.raw)
        } catch {
            throw error.vaultError("checking \(what)", path: path)
        }
        return try body(descriptor.raw, status)
    }
}
