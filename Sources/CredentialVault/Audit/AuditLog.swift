#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import FoundationEssentials
import Synchronization
import VaultCrypto

/// The agent's audit trail of one vault: one line per entry operation, each chained to the one
/// before with an HMAC under a key only the vault's key reaches (docs/SECURITY.md, "Audit log").
///
/// Files, in `directory` (0700): `<vault id>.log` (current), `<vault id>.log.1` … `.log.<n>`
/// (rotated, 1 the newest), `<vault id>.head` (the sequence number and MAC of the last line,
/// authenticated, so a cut tail shows) and `<vault id>.lock` (one writer at a time across processes). A line is `<mac hex> <prev hex> <json>\n` with
/// `mac = HMAC(K_audit, "vault/audit/v1" ‖ prev ‖ json)`, `prev` the MAC of the line before (32 zero
/// bytes before the first record). Rotation moves the current file to `.log.1` when the next line
/// would take it past `maximumFileBytes`; the chain goes on in the new file; the oldest file past
/// `rotatedFiles` is deleted, and verification then starts at the oldest line kept.
package final class AuditLog: Sendable {
    /// Size bound and rotation.
    package struct Limits: Sendable {
        /// A file is rotated before a line would take it past this size.
        package var maximumFileBytes: Int
        /// How many rotated files are kept besides the current one.
        package var rotatedFiles: Int

        /// 1 MiB per file, 4 rotated files: about 5 MiB and 15,000 records per vault.
        package static let standard = Limits(maximumFileBytes: 1 << 20, rotatedFiles: 4)

        /// Limits as given.
        package init(maximumFileBytes: Int, rotatedFiles: Int) {
            self.maximumFileBytes = maximumFileBytes
            self.rotatedFiles = rotatedFiles
        }
    }

    /// The folder of the logs.
    package let directory: String
    /// The vault's id in hex: the logs' name.
    package let vaultID: String
    private let key: SymmetricKey
    private let limits: Limits
    /// One append at a time within the process (the file lock does it across processes).
    private let appending = Mutex(())

    /// Where the chain stands: the last record's number and MAC.
    private struct Tail {
        var sequence: UInt64
        var mac: [UInt8]
    }

    static let macInfo = Array("vault/audit/v1".utf8)
    static let headInfo = Array("vault/audit-head/v1".utf8)
    /// The HKDF label of the audit key (IKM: the vault's state key; salt: the vault id).
    package static let keyInfo = Array("vault/v3/audit-log".utf8)
    /// The largest log file read back (a bound before allocating).
    static let maximumReadBytes = 64 << 20

    /// A log for one vault.
    /// - Parameters:
    ///   - directory: the logs' folder (made 0700 on the first record).
    ///   - vaultID: the vault's id in hex.
    ///   - key: `K_audit` (`SecretStore.auditKey()`).
    ///   - limits: size bound and rotation.
    package init(directory: String, vaultID: String, key: SymmetricKey, limits: Limits = .standard) {
        self.directory = directory
        self.vaultID = vaultID
        self.key = key
        self.limits = limits
    }

    /// `$XDG_STATE_HOME/vault/audit`, else `~/.local/state/vault/audit`; nil without a home.
    package static func standardDirectory(environment: [String: String] = ProcessEnvironment.values("XDG_STATE_HOME", "HOME")) -> String? {
        if let state = environment["XDG_STATE_HOME"], state.hasPrefix("/") { return PathText.joining(state, "vault/audit") }
        guard let home = PathText.homeDirectory(environment: environment), home.hasPrefix("/") else { return nil }
        return PathText.joining(home, ".local/state/vault/audit")
    }

    /// The current file's name for the vault `vaultID`.
    package static func currentName(vaultID: String) -> String { "\(vaultID).log" }
    /// The name of rotated file `number` (1: the newest).
    package static func rotatedName(vaultID: String, _ number: Int) -> String { "\(vaultID).log.\(number)" }
    /// The head's name.
    package static func headName(vaultID: String) -> String { "\(vaultID).head" }
    var currentName: String { Self.currentName(vaultID: vaultID) }
    func rotatedName(_ number: Int) -> String { Self.rotatedName(vaultID: vaultID, number) }
    var headName: String { Self.headName(vaultID: vaultID) }
    var lockName: String { "\(vaultID).lock" }

    /// Appends one record, durably enough that the next reader sees it (written before the
    /// operation is carried out; the caller refuses the operation when this throws).
    /// - Throws: `.insecurePermissions` for an unsafe folder or file, `.io`.
    package func append(_ event: AuditEvent) throws {
        try appending.withLock { _ in
            let folder = try SecureFileSystem.openPrivateDirectory(directory, create: true)
            // One writer at a time across processes (two agents, an agent restarted while the old one
            // finishes a request): under the lock the chain goes on from the head as written.
            let lock = try FileLock.acquire(path: PathText.joining(directory, lockName), mode: .exclusive, timeout: .seconds(5))
            defer { lock.release() }
            let current = try loadTail(in: folder.raw)
            let sequence = current.sequence + 1
            let json = try event.json(sequence: sequence).serialized()
            let mac = try Self.mac(key: key, previous: current.mac, json: json)
            var line = Array(mac.hexString.utf8) + [0x20] + Array(current.mac.hexString.utf8) + [0x20] + json
            line.append(0x0A)
            try rotateIfNeeded(in: folder.raw, adding: line.count)
            try appendLine(line, in: folder.raw)
            try writeHead(Tail(sequence: sequence, mac: mac), in: folder.raw)
        }
    }

    static func mac(key: SymmetricKey, previous: [UInt8], json: [UInt8]) throws -> [UInt8] {
        try HMACSHA256.authenticationCode(for: macInfo + previous + json, using: key)
    }

    static func headMAC(key: SymmetricKey, sequence: UInt64, mac: [UInt8]) throws -> [UInt8] {
        var writer = ByteWriter(capacity: 64)
        writer.append(contentsOf: headInfo)
        writer.append(sequence)
        writer.append(contentsOf: mac)
        return try HMACSHA256.authenticationCode(for: writer.bytes, using: key)
    }

    /// The head as written: `<seq, 20 digits> <mac hex> <head mac hex>\n`, a fixed 151 bytes.
    static func encodeHead(sequence: UInt64, mac: [UInt8], key: SymmetricKey) throws -> [UInt8] {
        let digits = String(sequence)
        let padded = String(repeating: "0", count: max(0, 20 - digits.count)) + digits
        return Array("\(padded) \(mac.hexString) \(try headMAC(key: key, sequence: sequence, mac: mac).hexString)\n".utf8)
    }

    /// Where to go on from: the head when it authenticates, else the current file's last line
    /// (a head that does not match stays for `verify` to report), else the start. Read on every
    /// append, under the lock (150 bytes), so no process goes on from a stale tail.
    private func loadTail(in folder: Int32) throws -> Tail {
        let headPath = PathText.joining(directory, headName)
        if let bytes = try? SecureFileSystem.readPrivateFile(headPath, maxBytes: 256),
           let head = AuditLogReader.parseHead(bytes), try Self.headMAC(key: key, sequence: head.sequence, mac: head.mac) == head.headMAC {
            return Tail(sequence: head.sequence, mac: head.mac)
        }
        let currentPath = PathText.joining(directory, currentName)
        if let bytes = try? SecureFileSystem.readPrivateFile(currentPath, maxBytes: Self.maximumReadBytes),
           let last = AuditLogReader.lines(of: bytes).last, let line = try? AuditLogReader.parseLine(last) {
            return Tail(sequence: line.sequence, mac: line.mac)
        }
        return Tail(sequence: 0, mac: [UInt8](repeating: 0, count: 32))
    }

    private func rotateIfNeeded(in folder: Int32, adding count: Int) throws {
        let size: Int
        do {
            size = Int(try Syscall.linkStatus(currentName, in: folder).st_size)
        } catch let error where error.code == ENOENT {
            return
        } catch {
            throw error.vaultError("reading the audit log's size", path: PathText.joining(directory, currentName))
        }
        guard size > 0, size + count > limits.maximumFileBytes else { return }
        do {
            let oldest = rotatedName(limits.rotatedFiles)
            do { try Syscall.unlinkEntry(oldest, in: folder) } catch where error.code == ENOENT {}
            if limits.rotatedFiles > 1 {
                for number in stride(from: limits.rotatedFiles - 1, through: 1, by: -1) {
                    do { try Syscall.renameEntry(rotatedName(number), to: rotatedName(number + 1), in: folder) } catch where error.code == ENOENT {}
                }
            }
            if limits.rotatedFiles > 0 {
                try Syscall.renameEntry(currentName, to: rotatedName(1), in: folder)
            } else {
                try Syscall.unlinkEntry(currentName, in: folder)
            }
        } catch {
            throw error.vaultError("rotating the audit log", path: PathText.joining(directory, currentName))
        }
    }

    private func appendLine(_ line: [UInt8], in folder: Int32) throws {
        let path = PathText.joining(directory, currentName)
        do {
            let file = OwnedDescriptor(try Syscall.openFile(currentName, in: folder, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC,
                                                             mode: 0o600))
            try Self.checkPrivate(file.raw, path: path)
            try Syscall.writeAll(file.raw, line[...])
            try file.close()
        } catch let error as SyscallError {
            throw error.code == ELOOP ? VaultError(.insecurePermissions, "the audit log is a symbolic link", path: path)
                                      : error.vaultError("writing the audit log", path: path)
        }
    }

    private func writeHead(_ tail: Tail, in folder: Int32) throws {
        let path = PathText.joining(directory, headName)
        do {
            let file = OwnedDescriptor(try Syscall.openFile(headName, in: folder, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, mode: 0o600))
            try Self.checkPrivate(file.raw, path: path)
            try Syscall.writeAll(file.raw, try Self.encodeHead(sequence: tail.sequence, mac: tail.mac, key: key)[...], at: 0)
            try file.close()
        } catch let error as SyscallError {
            throw error.vaultError("writing the audit log's head", path: path)
        }
    }

    /// A file we append to must be ours, regular, 0600 at most, one link.
    private static func checkPrivate(_ descriptor: Int32, path: String) throws {
        let status: stat
        do { status = try Syscall.status(of: descriptor) } catch { throw error.vaultError("checking the audit log", path: path) }
        guard status.st_mode & S_IFMT == S_IFREG, status.st_uid == geteuid(), status.st_mode & 0o077 == 0, status.st_nlink == 1 else {
            throw VaultError(.insecurePermissions, "the audit log is not a private regular file of this user", path: path,
                             fix: "remove it (and report it: something else wrote there)")
        }
    }
}
