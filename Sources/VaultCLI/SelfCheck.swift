import ArgumentParser
import CredentialVault

extension VaultCommand {
    /// Runs a short check of the crypto layer against the linked OpenSSL.
    struct SelfCheck: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "self-check",
            abstract: "Check that the crypto layer works with the installed OpenSSL."
        )

        func run() throws {
            for line in try CryptoSelfCheck.run() {
                print(line)
            }
        }
    }
}
