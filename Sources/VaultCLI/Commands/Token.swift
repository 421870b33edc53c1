import ArgumentParser
import CredentialVault
import Foundation

extension VaultCommand {
    /// `vault token`: the signed-in user's access token, for scripts.
    struct Token: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "token",
            abstract: "Print the signed-in user's access token, if it is valid (for `curl -H \"Authorization: Bearer $(vault token)\"`).",
            discussion: "Writes exactly the token bytes. Exits 77 when the session is expired, 66 when nobody is signed in."
        )

        @OptionGroup var options: VaultOptions

        @Option(name: .customLong("min-ttl"), help: ArgumentHelp(
            "Fail unless the token stays valid this long (90s, 15m).", valueName: "DURATION"),
                transform: HumanDuration.seconds(in:))
        var minTTL: Int64 = 0

        func run() async throws {
            // A read command: nothing is created or settled (SessionManager.peek).
            if options.hasNoSession { throw VaultError.vaultNotFound(path: options.directory) }
            let session = try options.sessionManager(needsKey: SecretStore.exists(in: options.directory))
            switch await session.peek(minTTL: .seconds(minTTL)) {
            case let .signedIn(_, credentials), let .needsOnboarding(_, credentials):
                try StandardIO.printOutput(credentials.accessToken)
            case .expired:
                throw VaultError(.sessionExpired, "the access token is expired (or expires within --min-ttl)",
                                 fix: "refresh it in your app, or sign in again with 'vault signin'")
            case .guest:
                throw VaultError(.notSignedIn, "nobody is signed in", fix: "sign in with 'vault signin'")
            case let .unavailable(why):
                throw why.error ?? VaultError(.wrongKey, "the vault is locked: no key was given", fix: "pass --key-file or a passphrase")
            }
        }
    }
}
