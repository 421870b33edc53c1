import Foundation
import Testing
import TestScheduling
@testable import CredentialVault

/// `DotEnvFile` reads what python-dotenv reads: the corpus's expected values were written by the
/// real python-dotenv 1.2.2 (`dotenv_values(path, interpolate=False)`), and scripts/test runs
/// `dotenvCorpusMatchesThePythonDotenvInstalledHere` against the python-dotenv installed in CI.
@Suite("DotEnvFile", .blockingWork)
struct DotEnvFileTests {
    private static func fixture(_ name: String) throws -> Data {
        let root = try #require(Bundle.module.url(forResource: "Fixtures", withExtension: nil))
        return try Data(contentsOf: root.appendingPathComponent("dotenv/\(name)"))
    }

    /// The expected JSON object, keys in python's order, `nil` for a key without a value.
    private static func expected() throws -> [(key: String, value: String?)] {
        let data = try fixture("corpus.expected.json")
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        // JSONSerialization loses the order; take it from the text.
        let text = String(decoding: data, as: UTF8.self)
        let keys = object.keys.sorted {
            (text.range(of: "\n  \(Self.quoted($0)):")?.lowerBound ?? text.endIndex)
                < (text.range(of: "\n  \(Self.quoted($1)):")?.lowerBound ?? text.endIndex)
        }
        return keys.map { ($0, object[$0] as? String) }
    }

    private static func quoted(_ key: String) -> String {
        let data = (try? JSONSerialization.data(withJSONObject: [key], options: [.withoutEscapingSlashes])) ?? Data()
        return String(String(decoding: data, as: UTF8.self).dropFirst().dropLast())
    }

    private static func parsed(_ name: String) throws -> [(key: String, value: String?)] {
        try DotEnvFile(parsing: Array(try fixture(name)), path: name).values.map { ($0.key, $0.value) }
    }

    @Test func theCorpusGivesWhatPythonDotenvGives() throws {
        let expected = try Self.expected()
        let parsed = try Self.parsed("corpus.env")
        #expect(parsed.map(\.key) == expected.map(\.key))
        for (mine, theirs) in zip(parsed, expected) {
            #expect(mine.value == theirs.value, "\(mine.key)")
        }
        #expect(expected.count > 30, "the corpus is read whole")
    }

    @Test func crlfLineEndsAndAByteOrderMarkGiveTheSameValues() throws {
        let plain = try Self.parsed("corpus.env"), windows = try Self.parsed("corpus-crlf-bom.env")
        #expect(try Self.fixture("corpus-crlf-bom.env").starts(with: [0xEF, 0xBB, 0xBF]))
        #expect(windows.map(\.key) == plain.map(\.key))
        #expect(windows.map(\.value) == plain.map(\.value))
    }

    @Test func aLineThatIsNoStatementRefusesTheFileNamingTheLine() throws {
        let error = try #require(throws: VaultError.self) {
            try DotEnvFile(parsing: Array(try Self.fixture("malformed.env")), path: "malformed.env")
        }
        #expect(error.code == .invalidInput)
        #expect(error.message.contains("malformed.env, line 3"))
        #expect(!error.message.contains("novalue-key"), "the line's text (a value, maybe) is not repeated")
    }

    @Test(arguments: [
        "KEY=\"never closed\n", "KEY='never closed", "KEY=\"a\" b\n", "BAD KEY=1\n", "=x\n", "'unclosed=1\n",
    ])
    func eachMalformedStatementIsRefused(text: String) {
        #expect(throws: VaultError.self) { try DotEnvFile(parsing: Array(text.utf8), path: "f") }
    }

    @Test func textThatIsNotUTF8IsRefused() {
        #expect(throws: VaultError.self) { try DotEnvFile(parsing: [0x41, 0x3D, 0xFF, 0xFE], path: "f") }
    }

    @Test func theLastOfAKeySetTwiceWinsAtTheFirstPosition() throws {
        let file = try DotEnvFile(parsing: Array("A=1\nB=2\nA=3\n".utf8), path: "f")
        #expect(file.values.map(\.key) == ["A", "B"])
        #expect(file.values.map(\.value) == ["3", "2"])
        #expect(file.values.map(\.line) == [3, 2])
        #expect(file.bindings.count == 3)
    }

    @Test func lineNumbersCountEveryKindOfLineEnd() throws {
        let file = try DotEnvFile(parsing: Array("A=1\r\nB=\"x\ny\"\rC=3\n\n# c\nD=4".utf8), path: "f")
        #expect(file.values.map(\.line) == [1, 2, 4, 7])
        #expect(file.values.map(\.value) == ["1", "x\ny", "3", "4"])
    }

    /// The same corpus through the python-dotenv installed on this machine (CI installs it), so the
    /// golden file and the real parser are held together.
    @Test(.enabled(if: DotEnvFileTests.pythonDotenvIsInstalled))
    func theCorpusMatchesThePythonDotenvInstalledHere() throws {
        let root = try #require(Bundle.module.url(forResource: "Fixtures", withExtension: nil))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        let script = "import dotenv, json, sys; print(json.dumps(dotenv.dotenv_values(sys.argv[1], interpolate=False, encoding='utf-8-sig')))"
        for name in ["corpus.env", "corpus-crlf-bom.env"] {
            process.arguments = ["python3", "-c", script, root.appendingPathComponent("dotenv/\(name)").path]
            let pipe = Pipe()
            let run = Process()
            run.executableURL = process.executableURL
            run.arguments = process.arguments
            run.standardOutput = pipe
            try run.run()
            let output = pipe.fileHandleForReading.readDataToEndOfFile()
            run.waitUntilExit()
            let python = try #require(try JSONSerialization.jsonObject(with: output) as? [String: Any])
            let parsed = try Self.parsed(name)
            #expect(Set(python.keys) == Set(parsed.map(\.key)), "\(name)")
            for (key, value) in parsed {
                #expect((python[key] as? String) == value, "\(name): \(key)")
            }
        }
    }

    static var pythonDotenvIsInstalled: Bool {
        let run = Process()
        run.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        run.arguments = ["python3", "-c", "import dotenv"]
        run.standardError = FileHandle.nullDevice
        guard (try? run.run()) != nil else { return false }
        run.waitUntilExit()
        return run.terminationStatus == 0
    }
}
