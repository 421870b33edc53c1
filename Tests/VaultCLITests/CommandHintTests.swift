@testable import CredentialVault
import Testing
@testable import VaultCLI

/// The library's fixes name no command; the CLI replaces them with its own commands and flags.
@Suite struct CommandHintTests {
    @Test func libraryErrorsNameNoCommandButTheCLIDoes() {
        let cases: [(VaultError, String)] = [
            (.entryNotFound("api"), "'vault list'"),
            (.vaultNotFound(path: "/v"), "'vault init'"),
            (.entryExists("api"), "--replace"),
            (.wrongKey, "--key-file"),
        ]
        for (error, cliWords) in cases {
            #expect(error.fix?.contains("'vault") == false, "\(error.code): \(error.fix ?? "")")
            #expect(error.fix?.contains("--") == false, "\(error.code): \(error.fix ?? "")")
            #expect(CommandHints.hint(for: error)?.contains(cliWords) == true, "\(error.code)")
        }
    }

    /// Issue 26, bug 2: `busy` carries no shell command in the library; the CLI's hint names `fuser`.
    @Test func busyGetsTheShellHintFromTheCLIOnly() throws {
        let error = VaultError(.busy, "another process is using the vault", path: "/v/session.lock", fix: "wait a moment and try again",
                               topic: .busy)
        #expect(CommandHints.hint(for: error) == "wait and try again, or find the process holding it: fuser -v /v/session.lock")
    }

    /// Review of issue 39, finding 6: kept versions count toward the 512 MiB cap; at the cap the
    /// hint names the history limit (the library's fix names no command).
    @Test func theFileCapWithKeptVersionsNamesTheHistoryLimit() {
        let withHistory = VaultFileCodec.fileCapError(keepsVersions: true)
        #expect(withHistory.fix?.contains("vault history") == false)
        #expect(CommandHints.hint(for: withHistory)?.contains("'vault history --limit N'") == true)
        #expect(withHistory.message.contains("earlier versions kept as history count toward it"))
        let without = VaultFileCodec.fileCapError(keepsVersions: false)
        #expect(CommandHints.hint(for: without) == "remove entries or store large files elsewhere")
    }

    @Test func errorsWithoutATopicKeepTheLibrarysFix() {
        let error = VaultError(.io, "write failed", fix: "free some disk space")
        #expect(CommandHints.hint(for: error) == "free some disk space")
    }
}
