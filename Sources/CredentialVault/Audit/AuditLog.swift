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
/// (rotated, 1 the newest), `<vault id>.head` (the sequence number and MAC of the last line and
/// the number of the oldest record kept, authenticated, so a cut tail or a removed start shows;
/// a log found without a valid head gets a `head-lost` record that `verify` refuses) and `<vault id>.lock` (one writer at a time across processes). A line is `<mac hex> <prev hex> <json>\n` with
/// `mac = HMAC(K_audit, "vault/audit/v1" ‖ prev ‖ json)`, `prev` the MAC of the line before (32 zero
/// bytes before the first record). Rotation moves the current file to `.log.1` when the next line
/// would take it past `maximumFileBytes`; the chain goes on in the new file; the oldest file past
/// `rotatedFiles` is deleted, the head then names the oldest record kept, and verification starts there.
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

    /// Where the chain stands: the last record's number and MAC, and the number of the oldest
    /// record kept (1 until rotation drops a file).
    struct Tail {
        var sequence: UInt64
        var mac: [UInt8]
        var firstKept: UInt64
    }

    static let macInfo = Array("vault/audit/v1".utf8)
    static let headInfo = Array("vault/audit-head/v2".utf8)
    /// The `operation` of the record the agent writes when it found the log without a head it could
    /// authenticate: `verify` reports that record as a failure.
    package static let headLostOperation = "head-lost"
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
            var current = try loadTail(in: folder.raw)
            if let lost = current.headLost {
                // A log without a head we can authenticate: its end cannot be checked, so no record
                // goes on from it silently. The marker is MAC'd into the chain and `verify` fails on it.
                current.tail = try appendRecord(Self.headLostRecord(sequence: current.tail.sequence + 1, time: event.time, reason: lost),
                                                after: current.tail, in: folder.raw)
            }
            _ = try appendRecord(event.json(sequence: current.tail.sequence + 1), after: current.tail, in: folder.raw)
        }
    }

    /// Appends one record after `tail` (rotating first when needed) and writes the head.
    private func appendRecord(_ record: JSONValue, after tail: Tail, in folder: Int32) throws -> Tail {
        let sequence = tail.sequence + 1
        let json = try record.serialized()
        let mac = try Self.mac(key: key, previous: tail.mac, json: json)
        var line = Array(mac.hexString.utf8) + [0x20] + Array(tail.mac.hexString.utf8) + [0x20] + json
        line.append(0x0A)
        let firstKept = try rotateIfNeeded(in: folder, adding: line.count, next: sequence) ?? tail.firstKept
        try appendLine(line, in: folder)
        let written = Tail(sequence: sequence, mac: mac, firstKept: firstKept)
        try writeHead(written, in: folder)
        return written
    }

    /// The marker record of a lost head: `operation` "head-lost", no entry nor caller, `decision` "none",
    /// `rule` saying what was found.
    static func headLostRecord(sequence: UInt64, time: Date, reason: String) -> JSONValue {
        .object([
            "seq": .integer(Int128(sequence)),
            "time": .string(ISO8601Timestamp.clampedString(from: time)),
            "operation": .string(headLostOperation),
            "entry": .null,
            "owner": .null,
            "caller": .null,
            "decision": .string("none"),
            "rule": .string(reason),
        ])
    }

    static func mac(key: SymmetricKey, previous: [UInt8], json: [UInt8]) throws -> [UInt8] {
        try HMACSHA256.authenticationCode(for: macInfo + previous + json, using: key)
    }

    static func headMAC(key: SymmetricKey, sequence: UInt64, firstKept: UInt64, mac: [UInt8]) throws -> [UInt8] {
        var writer = ByteWriter(capacity: 80)
        writer.append(contentsOf: headInfo)
        writer.append(sequence)
        writer.append(firstKept)
        writer.append(contentsOf: mac)
        return try HMACSHA256.authenticationCode(for: writer.bytes, using: key)
    }

    /// The head as written: `<seq, 20 digits> <first kept, 20 digits> <mac hex> <head mac hex>\n`,
    /// a fixed 172 bytes. "First kept" is the number of the oldest record the agent kept (1 until
    /// rotation dropped a file), so removed first records or files do not pass for rotated out.
    static func encodeHead(sequence: UInt64, firstKept: UInt64, mac: [UInt8], key: SymmetricKey) throws -> [UInt8] {
        func padded(_ number: UInt64) -> String {
            let digits = String(number)
            return String(repeating: "0", count: max(0, 20 - digits.count)) + digits
        }
        let headMAC = try headMAC(key: key, sequence: sequence, firstKept: firstKept, mac: mac)
        return Array("\(padded(sequence)) \(padded(firstKept)) \(mac.hexString) \(headMAC.hexString)\n".utf8)
    }

    /// Where to go on from, read on every append under the lock (172 bytes), so no process goes on
    /// from a stale tail: the head when it authenticates; with no log file at all, the start. A log
    /// whose head is missing or fails its MAC is not continued silently: the tail is its newest
    /// file's last line (its MAC checked, the result said), and `headLost` says why, for the
    /// marker record `append` writes before the event.
    private func loadTail(in folder: Int32) throws -> (tail: Tail, headLost: String?) {
        let headPath = PathText.joining(directory, headName)
        let headBytes: [UInt8]?
        do {
            headBytes = try SecureFileSystem.readPrivateFile(headPath, maxBytes: 256)
        } catch let error as VaultError where error.code == .notFound {
            headBytes = nil
        } catch let error as VaultError where error.code == .corrupt {
            headBytes = []   // too large to be a head: one that is not the agent's
        }
        if let headBytes, let head = AuditLogReader.parseHead(headBytes),
           try Self.headMAC(key: key, sequence: head.sequence, firstKept: head.firstKept, mac: head.mac) == head.headMAC {
            return (Tail(sequence: head.sequence, mac: head.mac, firstKept: head.firstKept), nil)
        }
        let files = existingFiles()
        let start = Tail(sequence: 0, mac: [UInt8](repeating: 0, count: 32), firstKept: 1)
        guard let newest = files.last else {
            // No log file: a new chain (a head left alone without its log is refused by `verify`,
            // since the new first record does not start at 1).
            return (start, headBytes == nil ? nil : "a head was there without any log file")
        }
        let why = headBytes == nil ? "the log's head was missing" : "the log's head failed its MAC"
        let bytes = try SecureFileSystem.readPrivateFile(PathText.joining(directory, newest), maxBytes: Self.maximumReadBytes)
        guard let last = AuditLogReader.lines(of: bytes).last, let line = try? AuditLogReader.parseLine(last) else {
            return (start, "\(why) and the last line of \(newest) is not a record")
        }
        let oldestFirst = firstSequence(of: files[0]) ?? 1
        let tail = Tail(sequence: line.sequence, mac: line.mac, firstKept: oldestFirst)
        let authentic = (try? Self.mac(key: key, previous: line.previous, json: line.json)) == line.mac
        return (tail, "\(why) when record \(line.sequence + 1) was to be written; the chain goes on from record \(line.sequence) (\(newest))"
                    + (authentic ? "" : ", whose MAC does not match") + ": records after it may have been cut")
    }

    /// The log files there are, oldest first (rotated files, then the current one).
    private func existingFiles() -> [String] {
        var number = 1
        while SecureFileSystem.exists(PathText.joining(directory, rotatedName(number))) { number += 1 }
        var names = stride(from: number - 1, through: 1, by: -1).map { rotatedName($0) }
        if SecureFileSystem.exists(PathText.joining(directory, currentName)) { names.append(currentName) }
        return names
    }

    /// The number of the first record of the file `name`, when it has a readable one.
    private func firstSequence(of name: String) -> UInt64? {
        guard let bytes = try? SecureFileSystem.readPrivateFile(PathText.joining(directory, name), maxBytes: Self.maximumReadBytes),
              let first = AuditLogReader.lines(of: bytes).first, let line = try? AuditLogReader.parseLine(first) else { return nil }
        return line.sequence
    }

    /// Rotates when `count` more bytes would pass the bound.
    /// - Returns: the number of the oldest record kept, when rotation dropped a file (nil otherwise).
    private func rotateIfNeeded(in folder: Int32, adding count: Int, next: UInt64) throws -> UInt64? {
        let size: Int
        do {
            size = Int(try Syscall.linkStatus(currentName, in: folder).st_size)
        } catch let error where error.code == ENOENT {
            return nil
        } catch {
            throw error.vaultError("reading the audit log's size", path: PathText.joining(directory, currentName))
        }
        guard size > 0, size + count > limits.maximumFileBytes else { return nil }
        var dropped = limits.rotatedFiles == 0
        do {
            let oldest = rotatedName(limits.rotatedFiles)
            do { try Syscall.unlinkEntry(oldest, in: folder); dropped = true } catch where error.code == ENOENT {}
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
        guard dropped else { return nil }
        // The oldest file kept now starts the verifiable log; with no rotated file, the next record does.
        return existingFiles().first.flatMap { firstSequence(of: $0) } ?? next
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
            let head = try Self.encodeHead(sequence: tail.sequence, firstKept: tail.firstKept, mac: tail.mac, key: key)
            try Syscall.writeAll(file.raw, head[...], at: 0)
            try Syscall.truncateFile(file.raw, length: head.count)
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
