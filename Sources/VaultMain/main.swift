// The `vault` executable: the file vault and sessions. A PostgreSQL store is handed to
// `vault-postgres`, a command that calls an authorization server to `vault-oauth`
// (docs/ARCHITECTURE.md, "Helper executables").
import VaultCLI

await VaultEntryPoint.run(postgres: nil, oauth: nil)
