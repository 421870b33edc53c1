import FoundationEssentials
import VaultCrypto

/// Reads a vault's audit log back (no key needed: records hold no secret) and verifies its chain
/// (the key needed: `SecretStore.auditKey()`).
package enum AuditLogReader {
    /// One line of a log file, parsed.
    package struct Line: Sendable {
        /// The file it is in (a name inside the log folder).
        package let file: String
        /// Its line number in that file, from 1.
        package let lineNumber: Int
        /// Its MAC (`AuditLog.mac`: the audit key over the previous MAC and `json`).
        package let mac: [UInt8]
        /// The previous line's MAC (32 zero bytes for the chain's first record).
        package let previous: [UInt8]
        /// The record's JSON bytes as written.
        package let json: [UInt8]
        /// The record.
        package let record: JSONValue
        /// Its sequence number.
        package let sequence: UInt64
    }

    /// What `verify` found when the chain holds.
    package struct Verification: Sendable, Equatable {
        /// How many records were checked.
        package let recordsChecked: Int
        /// The first record kept (1 unless older files were rotated out).
        package let firstSequence: UInt64
        /// The file the check started in.
        package let firstFile: String?
        /// True when records before the first kept one were rotated out (their MACs cannot be checked);
        /// the head, under its MAC, says so, so removed first records do not pass for rotated out.
        package var startsAfterRotation: Bool { firstSequence > 1 }
    }

    /// The records of the vault `vaultID`'s log, oldest first, across the rotated files.
    /// - Throws: `.notFound` when there is no log; `.tampered` naming a line that cannot be parsed; `.io`.
    package static func read(directory: String, vaultID: String) throws -> [Line] {
        var names: [String] = []
        // Rotated files oldest first (any number that is there, not only up to the limit), then the current one.
        var number = 1
        while SecureFileSystem.exists(PathText.joining(directory, AuditLog.rotatedName(vaultID: vaultID, number))) { number += 1 }
        for older in stride(from: number - 1, through: 1, by: -1) { names.append(AuditLog.rotatedName(vaultID: vaultID, older)) }
        if SecureFileSystem.exists(PathText.joining(directory, AuditLog.currentName(vaultID: vaultID))) {
            names.append(AuditLog.currentName(vaultID: vaultID))
        }
        guard !names.isEmpty else {
            throw VaultError(.notFound, "there is no audit log of this vault in \(directory)",
                             fix: "the agent writes one for each vault it serves; none was served since")
        }
        var lines: [Line] = []
        for name in names {
            let path = PathText.joining(directory, name)
            let bytes = try SecureFileSystem.readPrivateFile(path, maxBytes: AuditLog.maximumReadBytes)
            for (index, text) in Self.lines(of: bytes).enumerated() {
                do {
                    let parsed = try parseLine(text)
                    lines.append(Line(file: name, lineNumber: index + 1, mac: parsed.mac, previous: parsed.previous, json: parsed.json,
                                      record: parsed.record, sequence: parsed.sequence))
                } catch {
                    throw failure(at: "line \(index + 1) of \(name)", "it is not a record", path: path)
                }
            }
        }
        return lines
    }

    /// A failed check of the audit log (exit 65 as any tampering), worded for the log: the vault
    /// itself is not what failed.
    /// - Parameters:
    ///   - place: "record N (file, line L)", or "its head".
    static func failure(at place: String, _ why: String, path: String) -> VaultError {
        VaultError(.tampered, "the audit log failed its check at \(place): \(why)", path: path,
                   fix: "the vault itself is not affected; keep the audit log's files as evidence (move them aside to let the agent start a new log)")
    }

    /// Checks the chain: each line's MAC, each line's link to the one before, the numbers, the
    /// first record against the head's oldest kept record (so removed first records or files show),
    /// any record the agent wrote on finding the head lost, and the head (so a cut tail shows).
    /// - Returns: what was checked.
    /// - Throws: `.tampered` naming the first record that fails; `.notFound` without a log.
    package static func verify(directory: String, vaultID: String, key: SymmetricKey) throws -> Verification {
        let lines = try read(directory: directory, vaultID: vaultID)
        let headPath = PathText.joining(directory, AuditLog.headName(vaultID: vaultID))
        let headBytes: [UInt8]?
        do {
            headBytes = try SecureFileSystem.readPrivateFile(headPath, maxBytes: 256)
        } catch let error as VaultError where error.code == .notFound {
            headBytes = nil
        } catch let error as VaultError where error.code == .corrupt {
            headBytes = []   // too large to be a head: one that is not the agent's
        }
        var head: Head?
        if let headBytes, let parsed = parseHead(headBytes),
           try AuditLog.headMAC(key: key, sequence: parsed.sequence, firstKept: parsed.firstKept, mac: parsed.mac) == parsed.headMAC {
            head = parsed
        }
        var previous: Line?
        for line in lines {
            let path = PathText.joining(directory, line.file)
            func bad(_ why: String) -> VaultError {
                failure(at: "record \(line.sequence) (\(line.file), line \(line.lineNumber))", why, path: path)
            }
            guard try AuditLog.mac(key: key, previous: line.previous, json: line.json) == line.mac else {
                throw bad("its MAC does not match: the record was edited, or the key is not this vault's")
            }
            if let previous {
                guard line.previous == previous.mac else {
                    throw bad("it does not follow record \(previous.sequence): a record before it was removed, or records were reordered")
                }
                guard line.sequence == previous.sequence + 1 else { throw bad("its number does not follow \(previous.sequence)") }
            } else if line.sequence == 1 {
                guard line.previous == [UInt8](repeating: 0, count: 32) else { throw bad("the first record does not start the chain") }
            } else if let head, head.firstKept != line.sequence {
                throw bad(head.firstKept < line.sequence
                    ? "the log starts here but the agent kept records from \(head.firstKept): records before it were removed, not rotated out"
                    : "the log starts here but the agent's oldest kept record is \(head.firstKept)")
            }
            if case let .object(fields) = line.record, case let .string(operation)? = fields["operation"], operation == AuditLog.headLostOperation {
                let said: String = if case let .string(text)? = fields["rule"] { text } else { "the log's head was lost" }
                throw bad("the agent wrote this record because \(said)")
            }
            previous = line
        }
        guard let last = previous else {
            throw failure(at: "its start", "every record was removed", path: headPath)
        }
        guard let headBytes else {
            throw failure(at: "its head", "the head is missing: the end of the log cannot be checked", path: headPath)
        }
        guard let head else {
            throw failure(at: "its head", parseHead(headBytes) == nil ? "the head is not one the agent writes" : "the head's MAC does not match",
                          path: headPath)
        }
        guard head.sequence == last.sequence, head.mac == last.mac else {
            if head.sequence > last.sequence {
                throw failure(at: "record \(last.sequence + 1)", "it is missing: the log ends at record \(last.sequence) but \(head.sequence) were written",
                              path: headPath)
            }
            throw failure(at: "record \(last.sequence) (\(last.file), line \(last.lineNumber))", "not the last record written (\(head.sequence))",
                          path: headPath)
        }
        return Verification(recordsChecked: lines.count, firstSequence: lines.first?.sequence ?? 1, firstFile: lines.first?.file)
    }

    /// The lines of a file (without their newline; a last line without one is kept).
    static func lines(of bytes: [UInt8]) -> [ArraySlice<UInt8>] {
        bytes.split(separator: 0x0A, omittingEmptySubsequences: false).filter { !$0.isEmpty }
    }

    /// `<mac hex> <prev hex> <json>`.
    static func parseLine(_ text: ArraySlice<UInt8>) throws -> (mac: [UInt8], previous: [UInt8], json: [UInt8], record: JSONValue, sequence: UInt64) {
        let bytes = Array(text)
        guard bytes.count > 130, bytes[64] == 0x20, bytes[129] == 0x20,
              let mac = decodeHex(bytes[0..<64]), let previous = decodeHex(bytes[65..<129]) else { throw AuditLineError() }
        let json = Array(bytes[130...])
        let record = integral(try JSONParser.parse(json))
        guard case let .object(fields) = record, case let .integer(number)? = fields["seq"], let sequence = UInt64(exactly: number) else {
            throw AuditLineError()
        }
        return (mac, previous, json, record, sequence)
    }

    /// The parser reads numbers as doubles; the records' numbers (seq, pid) are whole: shown as integers.
    private static func integral(_ value: JSONValue) -> JSONValue {
        switch value {
        case let .number(number): Int128(exactly: number).map { .integer($0) } ?? value
        case let .array(items): .array(items.map(integral))
        case let .object(fields): .object(fields.mapValues(integral))
        default: value
        }
    }

    /// A head as parsed (not yet authenticated).
    struct Head {
        let sequence: UInt64
        let firstKept: UInt64
        let mac: [UInt8]
        let headMAC: [UInt8]
    }

    /// `<seq> <first kept> <mac hex> <head mac hex>` and a newline.
    static func parseHead(_ bytes: [UInt8]) -> Head? {
        let parts = bytes.split(separator: 0x20)
        guard parts.count == 4, let sequence = UInt64(String(decoding: parts[0], as: UTF8.self)),
              let firstKept = UInt64(String(decoding: parts[1], as: UTF8.self)),
              let mac = decodeHex(parts[2]), let headMAC = decodeHex(parts[3].prefix(64)), parts[3].count == 65, parts[3].last == 0x0A else {
            return nil
        }
        return Head(sequence: sequence, firstKept: firstKept, mac: mac, headMAC: headMAC)
    }

    private struct AuditLineError: Error {}

    static func decodeHex(_ text: ArraySlice<UInt8>) -> [UInt8]? {
        guard text.count == 64 else { return nil }
        func value(_ digit: UInt8) -> UInt8? {
            switch digit {
            case 0x30...0x39: digit - 0x30
            case 0x61...0x66: digit - 0x61 + 10
            default: nil
            }
        }
        var bytes: [UInt8] = []
        var index = text.startIndex
        while index < text.endIndex {
            guard let high = value(text[index]), let low = value(text[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }
}
