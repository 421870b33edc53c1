// The `vault` executable: the file vault, sessions, OAuth; a PostgreSQL store is handed to
// `vault-postgres` (docs/ARCHITECTURE.md, "Two executables").
import VaultCLI

await VaultEntryPoint.run(postgres: nil)
