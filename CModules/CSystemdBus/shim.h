#ifndef VAULT_CSYSTEMDBUS_SHIM_H
#define VAULT_CSYSTEMDBUS_SHIM_H
// Only #includes: sd-bus from libsystemd, for the Secret Service provider (VaultSecretService).
#include <systemd/sd-bus.h>
#endif
