import Foundation
import Testing

/// The RFC 4226 / RFC 6238 vector files of the `cryptography-vectors` PyPI package
/// (`twofactor/rfc-4226.txt`, `twofactor/rfc-6238.txt`), read at run time, never copied here.
/// `VAULT_CRYPTOGRAPHY_VECTORS` names the package folder; otherwise `python3` is asked. In CI
/// (`CI=true`) a missing file fails the test; elsewhere it is skipped with a message.
enum RFCVectorFile {
    private static let root: URL? = locate()

    /// The records of `relativePath`: blocks of `KEY = VALUE` lines, each started by `COUNT`.
    static func records(_ relativePath: String, sourceLocation: SourceLocation = #_sourceLocation) -> [[String: String]]? {
        guard let root, let text = try? String(contentsOf: root.appendingPathComponent(relativePath), encoding: .utf8) else {
            let message = "test vectors twofactor/… from cryptography-vectors not found (pip install --no-deps cryptography-vectors)"
            if ProcessInfo.processInfo.environment["CI"] == "true" {
                Issue.record("\(message) — CI=true, so missing vectors are a failure", sourceLocation: sourceLocation)
            } else {
                print("SKIPPED: \(message)")
            }
            return nil
        }
        var records: [[String: String]] = []
        for line in text.split(whereSeparator: \.isNewline) where !line.hasPrefix("#") {
            let parts = line.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2 else { continue }
            if parts[0] == "COUNT" { records.append([:]) }
            if !records.isEmpty { records[records.count - 1][parts[0]] = parts[1] }
        }
        return records
    }

    private static func locate() -> URL? {
        if let override = ProcessInfo.processInfo.environment["VAULT_CRYPTOGRAPHY_VECTORS"], !override.isEmpty {
            return URL(fileURLWithPath: override, isDirectory: true)
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", "import cryptography_vectors, os; print(os.path.dirname(cryptography_vectors.__file__))"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return nil }
        let bytes = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let path = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return process.terminationStatus == 0 && !path.isEmpty ? URL(fileURLWithPath: path, isDirectory: true) : nil
    }
}
