/// The entry point the three executables call: `vault` (Sources/VaultMain), `vault-oauth`
/// (Sources/VaultOAuthMain, which links the OAuth client) and `vault-postgres`
/// (Sources/VaultPostgresMain, which links the OAuth client and the PostgreSQL store).
package enum VaultEntryPoint {
    /// Runs the `vault` command line and exits.
    /// - Parameters:
    ///   - postgres: what the PostgreSQL store adds, when the executable links it.
    ///   - oauth: what the OAuth client adds, when the executable links it.
    package static func run(postgres: (any PostgresCommandSupport)?, oauth: (any OAuthCommandSupport)?) async {
        await VaultCommand.main(postgres: postgres, oauth: oauth)
    }
}
