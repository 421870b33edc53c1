#ifndef VAULT_COPENSSL_SHIM_H
#define VAULT_COPENSSL_SHIM_H
// Only #includes: the system libcrypto headers that VaultCrypto uses.
#include <openssl/opensslv.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/core_names.h>
#include <openssl/params.h>
#endif
