// `vault-oauth`: the `vault` command linked with the OAuth client (async-http-client, SwiftNIO,
// NIO-SSL). `vault` hands it the commands that call an authorization server: signin --device,
// refresh, and token or signout when a client is stored (docs/ARCHITECTURE.md, "Helper executables").
import VaultCLI
import VaultOAuthCLI

await VaultEntryPoint.run(postgres: nil, oauth: OAuthCommands())
