import ArgumentParser
import CredentialVault

extension VaultCommand {
    /// Runs a short check of the crypto layer against the linked OpenSSL.
    struct SelfCheck: ContextCommand {
        static let configuration = CommandConfiguration(
            commandName: "self-check",
            abstract: "Check that the crypto layer works with the installed OpenSSL."
        )

        func run(_ context: CommandContext) async throws {
            try StandardIO.printOutput(CryptoSelfCheck.run().map { $0 + "\n" }.joined())
        }
    }
}
