#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Testing
import TestScheduling

/// `vault inject -i TEMPLATE [-o OUT]`: placeholders filled, everything else untouched, OUT written
/// 0600 and atomically, and nothing written on any error.
@Suite(.blockingWork) struct InjectCommandTests {
    static let secret = "inject-secret-\(UUID().uuidString)"

    static func sandbox() throws -> (CLISandbox, [String: String]) {
        let (sandbox, key) = try CLISandbox.withVault()
        for (name, value) in [("api", secret), ("db/password", "pw-2")] {
            let add = try sandbox.run(["add", name], stdin: Data(text: value), environment: key)
            guard add.status == 0 else { throw CLITestFailure("add failed: \(add.stderrText)") }
        }
        return (sandbox, key)
    }

    static let template = """
        # {{ .Release.Name }} stays for Helm
        api_token: "{{ vault://api }}"
        db: {{vault://db%2Fpassword}}{{	vault://api	}}
        literal: vault://api and {{ "vault://api" }}

        """

    @Test func theResultGoesToStandardOutput() throws {
        let (sandbox, key) = try Self.sandbox()
        defer { sandbox.cleanUp() }
        let input = sandbox.privateFile("config.tpl", Self.template)
        let result = try sandbox.run(["inject", "-i", input], environment: key)
        #expect(result.status == 0, "\(result.stderrText)")
        #expect(result.stdoutText == """
            # {{ .Release.Name }} stays for Helm
            api_token: "\(Self.secret)"
            db: pw-2\(Self.secret)
            literal: vault://api and {{ "vault://api" }}

            """)
    }

    @Test func outIsWrittenPrivateAndReplacedWhole() throws {
        let (sandbox, key) = try Self.sandbox()
        defer { sandbox.cleanUp() }
        let input = sandbox.privateFile("config.tpl", Self.template)
        let output = sandbox.path("config.yaml")
        FileManager.default.createFile(atPath: output, contents: Data("old".utf8), attributes: [.posixPermissions: 0o644])
        let result = try sandbox.run(["inject", "-i", input, "-o", output], environment: key)
        #expect(result.status == 0, "\(result.stderrText)")
        #expect(result.stdout.isEmpty)
        #expect(try String(contentsOfFile: output, encoding: .utf8).contains("api_token: \"\(Self.secret)\""))
        let mode = try #require(try FileManager.default.attributesOfItem(atPath: output)[.posixPermissions] as? Int)
        #expect(mode == 0o600)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: sandbox.root).filter { $0.contains(".tmp.") }
        #expect(leftovers.isEmpty)
    }

    @Test func aMissingEntryWritesNothing() throws {
        let (sandbox, key) = try Self.sandbox()
        defer { sandbox.cleanUp() }
        let input = sandbox.privateFile("config.tpl", "a: {{ vault://api }}\nb: {{ vault://absent }}\n")
        let output = sandbox.path("config.yaml")
        FileManager.default.createFile(atPath: output, contents: Data("old".utf8), attributes: [.posixPermissions: 0o600])
        let result = try sandbox.run(["inject", "-i", input, "-o", output], environment: key)
        #expect(result.status == 66)
        #expect(result.stderrText.contains("config.tpl, line 2"))
        #expect(result.stderrText.contains("vault://absent"))
        #expect(try String(contentsOfFile: output, encoding: .utf8) == "old")
        let fresh = sandbox.path("fresh.yaml")
        #expect(try sandbox.run(["inject", "-i", input, "-o", fresh], environment: key).status == 66)
        #expect(!FileManager.default.fileExists(atPath: fresh))
        #expect(try sandbox.run(["inject", "-i", input], environment: key).stdout.isEmpty, "nothing on standard output either")
    }

    @Test func aSymlinkedOutIsRefused() throws {
        let (sandbox, key) = try Self.sandbox()
        defer { sandbox.cleanUp() }
        let input = sandbox.privateFile("config.tpl", Self.template)
        let target = sandbox.privateFile("target", "untouched")
        let link = sandbox.path("link.yaml")
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: target)
        let result = try sandbox.run(["inject", "-i", input, "-o", link], environment: key)
        #expect(result.status == 77, "\(result.stderrText)")
        #expect(try String(contentsOfFile: target, encoding: .utf8) == "untouched")
    }

    @Test func aFolderOthersCanWriteIsRefused() throws {
        let (sandbox, key) = try Self.sandbox()
        defer { sandbox.cleanUp() }
        let input = sandbox.privateFile("config.tpl", Self.template)
        let shared = sandbox.path("shared")
        try FileManager.default.createDirectory(atPath: shared, withIntermediateDirectories: false)
        chmod(shared, 0o1777)
        let result = try sandbox.run(["inject", "-i", input, "-o", shared + "/config.yaml"], environment: key)
        #expect(result.status == 77, "\(result.stderrText)")
        #expect(result.stderrText.contains("others can write"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: shared).isEmpty)
    }

    @Test func aBrokenPlaceholderIsAUsageError() throws {
        let (sandbox, key) = try Self.sandbox()
        defer { sandbox.cleanUp() }
        let input = sandbox.privateFile("config.tpl", "ok\n{{ vault://api\n")
        let result = try sandbox.run(["inject", "-i", input], environment: key)
        #expect(result.status == 64)
        #expect(result.stderrText.contains("line 2"))
        #expect(try sandbox.run(["inject", "-i", sandbox.path("absent.tpl")], environment: key).status == 66)
    }

    @Test func aTemplateWithoutPlaceholdersNeedsNoKey() throws {
        let (sandbox, _) = try Self.sandbox()
        defer { sandbox.cleanUp() }
        let input = sandbox.privateFile("plain.tpl", "{{ .Values.x }}\n")
        let result = try sandbox.run(["inject", "-i", input])
        #expect(result.status == 0, "\(result.stderrText)")
        #expect(result.stdoutText == "{{ .Values.x }}\n")
    }
}
