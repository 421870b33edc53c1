import CredentialVault
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

    @Test func errorsWithoutATopicKeepTheLibrarysFix() {
        let error = VaultError(.io, "write failed", fix: "free some disk space")
        #expect(CommandHints.hint(for: error) == "free some disk space")
    }
}
