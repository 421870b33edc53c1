import ArgumentParser
import CredentialVault

extension VaultCommand {
    /// `vault guest`: enter guest mode and print the anonymous id.
    struct Guest: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "guest",
            abstract: "Enter guest mode (the 'skip' button) and print the anonymous id.",
            discussion: "Signs out first if someone is signed in. Guest items and settings are reset to defaults."
        )

        @OptionGroup var options: VaultOptions

        @Flag(help: "Start over with a new anonymous id.")
        var reset = false

        func run() async throws {
            let session = try options.sessionManager(needsKey: SecretStore.exists(in: options.directory))
            let state = await session.restore()
            if case let .unavailable(why) = state { throw why.error ?? VaultError(.wrongKey, "the vault is locked: \(why)") }
            let anonymousID = try await session.enterGuestMode(resetAnonymousID: reset)
            try StandardIO.printOutput(anonymousID + "\n")
        }
    }
}
