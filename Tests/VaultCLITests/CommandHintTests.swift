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

    @Test func errorsWithoutATopicKeepTheLibrarysFix() {
        let error = VaultError(.io, "write failed", fix: "free some disk space")
        #expect(CommandHints.hint(for: error) == "free some disk space")
    }
}
