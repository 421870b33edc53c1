import Foundation
import Testing

/// The library speaks no command line: no message, fix or log line in
/// `Sources/CredentialVault` names a `vault` subcommand or a `--flag`; the CLI adds its own
/// hints (`CommandHints`). Reads the sources next to this test file.
@Suite struct LibraryLanguageTests {
    static let subcommands = ["keygen", "init", "add", "get", "inspect", "list", "rm", "verify", "passwd",
                              "rotate", "wipe", "status", "signin", "signout", "guest", "token", "demo", "refresh",
                              "exec", "inject", "import", "agent", "unlock", "lock"]

    @Test func noStringLiteralNamesACommandOrFlag() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Sources/CredentialVault")
        let files = try #require(FileManager.default.enumerator(atPath: root.path)).compactMap { $0 as? String }
            .filter { $0.hasSuffix(".swift") }
        #expect(files.count > 20)
        let literal = try Regex(#""(?:[^"\\]|\\.)*""#)
        let command = try Regex("'vault |vault (?:\(Self.subcommands.joined(separator: "|")))\\b| --[a-z]")
        var offenders: [String] = []
        for file in files {
            let text = try String(contentsOf: root.appendingPathComponent(file), encoding: .utf8)
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated()
            where !line.trimmingCharacters(in: .whitespaces).hasPrefix("//") {
                for match in line.matches(of: literal) where match.output[0].substring?.contains(command) == true {
                    offenders.append("\(file):\(number + 1): \(match.output[0].substring ?? "")")
                }
            }
        }
        #expect(offenders.isEmpty, "\(offenders)")
    }
}
