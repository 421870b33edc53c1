// `vault-secret-service`: the `vault` command linked with sd-bus, so that `vault agent --secret-service`
// serves the freedesktop Secret Service (org.freedesktop.secrets) and `vault import --from secret-service`
// reads another provider's items. `vault` hands it those commands (docs/ARCHITECTURE.md, "Helper executables").
import VaultCLI
import VaultSecretService

await VaultEntryPoint.run(postgres: nil, oauth: nil, secretService: SecretServiceCommands())
