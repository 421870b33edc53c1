/// The entry point the two executables call: `vault` (Sources/VaultMain) and `vault-postgres`
/// (Sources/VaultPostgresMain, which links the PostgreSQL store).
package enum VaultEntryPoint {
    /// Runs the `vault` command line and exits.
    /// - Parameter postgres: what the PostgreSQL store adds, when the executable links it.
    package static func run(postgres: (any PostgresCommandSupport)?) async {
        await VaultCommand.main(postgres: postgres)
    }
}
