import CredentialVault
import Foundation
import Testing
import TestScheduling
@testable import VaultCLI

/// The man page's own sections (`vault --mdoc-sections`, put in place by scripts/manpages):
/// the real environment and exit statuses, from the same tables as `vault --help`,
/// rendered by the system's `man`.
@Suite(.blockingWork) struct ManualTests {
    /// `man -l` output for an mdoc page made of a minimal head and `body`.
    static func render(_ body: String, in sandbox: CLISandbox) throws -> String? {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/man") else {
            if ProcessInfo.processInfo.environment["CI"] == "true" {
                Issue.record("man (man-db) is required in CI (.ci/run installs it)")
            } else {
                print("skipped: man not installed")
            }
            return nil
        }
        let page = sandbox.path("vault.1")
        try Data((".Dd November 23, 2026\n.Dt VAULT 1\n.Os\n.Sh NAME\n.Nm vault\n.Nd test\n" + body).utf8)
            .write(to: URL(fileURLWithPath: page))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/man")
        process.arguments = ["-l", page]
        process.environment = ["MANPAGER": "cat", "PAGER": "cat", "MANWIDTH": "100", "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        return text
    }

    @Test func theManPageSectionsAreTheRealOnes() throws {
        let sandbox = try CLISandbox()
        defer { sandbox.cleanUp() }
        let sections = try sandbox.run(["--mdoc-sections"])
        #expect(sections.status == 0)
        let mdoc = sections.stdoutText
        #expect(mdoc.hasPrefix(".Sh ENVIRONMENT\n"))
        #expect(mdoc.contains("\n.Sh EXIT STATUS\n") && mdoc.contains("\n.Sh EXAMPLES\n"))
        #expect(!mdoc.contains(".Ex -std"), "not the generic exit status")
        guard let text = try Self.render(mdoc, in: sandbox) else { return }
        // Every row of the one exit-status table, and every environment variable.
        let flat = text.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        for row in VaultExitStatus.meanings {
            #expect(flat.contains("\(row.status) \(row.meaning)"), "man page lacks status \(row.status): \(row.meaning)")
        }
        for variable in ["VAULT_DIR", "VAULT_KEY_FILE", "VAULT_PASSPHRASE", "VAULT_NEW_PASSPHRASE"] {
            #expect(text.contains(variable), "man page lacks \(variable)")
        }
        #expect(text.contains("vault keygen ~/.config/vault/key"))
    }

    @Test func mdocTextProtectsMacrosAndBackslashes() throws {
        let sandbox = try CLISandbox()
        defer { sandbox.cleanUp() }
        // A text line that starts with a dot would be read as a macro; the escape keeps it text.
        let body = [".Sh DESCRIPTION", HelpText.mdocText(".Ex -std"), HelpText.mdocText("back\\slash"), HelpText.mdocText("'quoted'")]
        #expect(body[1] == "\\&.Ex -std")
        guard let text = try Self.render(body.joined(separator: "\n") + "\n", in: sandbox) else { return }
        #expect(text.contains(".Ex -std"))
        #expect(text.contains("back\\slash"))
        #expect(text.contains("'quoted'"))
    }
}
