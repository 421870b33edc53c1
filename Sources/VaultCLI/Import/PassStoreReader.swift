#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CredentialVault

/// `vault import --from pass FOLDER`: a password store (`~/.password-store`). Every `NAME.gpg` below
/// the folder is an entry named by its path without `.gpg`; its secret is the whole decrypted file,
/// as `pass show` prints it, decrypted by the user's own `gpg` (and its agent and pinentry, as
/// `pass` uses them). Hidden files and folders (`.git`, `.gpg-id`, `.extensions`) are not entries.
enum PassStoreReader {
    static func read(_ folder: String, decrypt: Bool) throws -> ImportSource {
        var files: [String] = []
        try collect(folder, relative: "", into: &files, depth: 0)
        guard !files.isEmpty else {
            throw VaultError(.notFound, "\(TerminalText.escaped(folder)) holds no .gpg files", path: folder,
                             fix: "give the password store's folder (pass uses ~/.password-store or $PASSWORD_STORE_DIR)")
        }
        var source = ImportSource()
        for relative in files.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
            let name = String(relative.dropLast(".gpg".count))
            guard decrypt else {
                source.candidates.append(.init(name: name, secret: SecureBytes(copying: [UInt8]()), label: nil))
                continue
            }
            source.candidates.append(try decryptFile(PathText.joining(folder, relative), name: name))
        }
        return source
    }

    /// The `.gpg` files below `folder`, as paths relative to the store.
    private static func collect(_ folder: String, relative: String, into files: inout [String], depth: Int) throws {
        guard depth < 64 else { return }
        let path = relative.isEmpty ? folder : PathText.joining(folder, relative)
        guard let directory = opendir(path) else {
            let code = errno
            if code == ENOENT { throw VaultError(.notFound, "there is no password store at \(TerminalText.escaped(path))", path: path) }
            throw VaultError.io("reading the password store", path: path, errno: code)
        }
        defer { closedir(directory) }
        while let entry = readdir(directory) {
            let name = withUnsafePointer(to: entry.pointee.d_name) { tuple in
                tuple.withMemoryRebound(to: CChar.self, capacity: MemoryLayout.size(ofValue: tuple.pointee)) { String(cString: $0) }
            }
            guard !name.hasPrefix(".") else { continue }
            let child = relative.isEmpty ? name : relative + "/" + name
            var status = stat()
            guard lstat(PathText.joining(folder, child), &status) == 0 else { continue }
            switch status.st_mode & S_IFMT {
            case S_IFDIR: try collect(folder, relative: child, into: &files, depth: depth + 1)
            case S_IFREG where name.hasSuffix(".gpg") && name.count > ".gpg".count: files.append(child)
            default: continue
            }
        }
    }

    /// Decrypts one file with `gpg -d`, the way `pass show` calls it. A file that decrypts to more
    /// than a secret may hold (a large file, a compression bomb) is an invalid candidate at once:
    /// gpg is killed as soon as its output passes the limit, not left blocked until the timeout.
    private static func decryptFile(_ path: String, name: String) throws -> ImportSource.Candidate {
        // The agent's terminal pinentry needs the terminal's name; pass exports it the same way.
        if getenv("GPG_TTY") == nil, isatty(0) == 1, let tty = ttyname(0) { setenv("GPG_TTY", tty, 0) }
        let result = Subprocess.run(["gpg", "-d", "--quiet", "--yes", "--compress-algo=none", "--no-encrypt-to", "--", path],
                                    captureOutput: true, captureErrors: true, timeout: 300)
        if result.outputTooLarge {
            return .init(name: name, secret: SecureBytes(copying: [UInt8]()), label: nil,
                         invalidReason: "it decrypts to more than \(VaultLimits.maximumSecretBytes) bytes (1 MiB), the limit of a secret; "
                             + "gpg was stopped")
        }
        guard result.status == 0, let output = result.output else {
            if result.status == 127 {
                throw VaultError(.notFound, "gpg is not installed, and a password store is read with it", fix: "install gnupg")
            }
            let reason = String(decoding: result.errors.prefix(400), as: UTF8.self)
            throw VaultError(.wrongKey, "gpg could not decrypt '\(TerminalText.escaped(name))': \(TerminalText.escaped(reason))",
                             path: path, fix: "check that 'pass show \(name)' works (the gpg key and its agent)")
        }
        return .init(name: name, secret: output, label: nil)
    }
}
