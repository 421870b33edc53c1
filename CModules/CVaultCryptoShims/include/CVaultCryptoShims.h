#ifndef VAULT_CRYPTO_SHIMS_H
#define VAULT_CRYPTO_SHIMS_H

// The only C that vault writes. It holds what Swift cannot call well:
// macros, OSSL_PARAM arrays built from C strings, pointer casts, the version
// guard, and the two AEAD helpers that enforce exact nonce and tag sizes.

#include <stddef.h>
#include <stdint.h>
#include <openssl/opensslv.h>

#if OPENSSL_VERSION_NUMBER < 0x30000000L
#error "vault needs OpenSSL 3.0 or later (apt-get install libssl-dev)"
#endif

#define VAULT_AES256GCM_KEY_BYTES 32
#define VAULT_AES256GCM_NONCE_BYTES 12
#define VAULT_AES256GCM_TAG_BYTES 16

/// Result codes of the AEAD helpers.
#define VAULT_SHIM_OK 1
#define VAULT_SHIM_AUTH_FAILED 0
#define VAULT_SHIM_ERROR (-1)

/// AES-256-CTR (NIST SP 800-38A) with a 32-byte key and a 16-byte initial counter block: XORs
/// `length` bytes of `input` with the key stream into `output` (the same call encrypts and
/// decrypts). No authentication: callers authenticate what it protects by other means.
int vault_aes256ctr_xor(const uint8_t *key,
                        const uint8_t *counter_block,
                        const uint8_t *input, size_t length,
                        uint8_t *output);

/// AES-256-GCM encryption with a 32-byte key, a 12-byte nonce and a 16-byte tag.
/// `ciphertext` must hold `plaintext_len` bytes, `tag` 16 bytes.
int vault_aes256gcm_seal(const uint8_t *key,
                         const uint8_t *nonce,
                         const uint8_t *aad, size_t aad_len,
                         const uint8_t *plaintext, size_t plaintext_len,
                         uint8_t *ciphertext,
                         uint8_t *tag);

/// AES-256-GCM decryption. Writes into `plaintext` (which must hold
/// `ciphertext_len` bytes) and wipes it again unless the 16-byte tag verifies.
/// Returns VAULT_SHIM_OK, VAULT_SHIM_AUTH_FAILED or VAULT_SHIM_ERROR.
int vault_aes256gcm_open(const uint8_t *key,
                         const uint8_t *nonce,
                         const uint8_t *aad, size_t aad_len,
                         const uint8_t *ciphertext, size_t ciphertext_len,
                         const uint8_t *tag,
                         uint8_t *plaintext);

/// HKDF-SHA256 through EVP_KDF "HKDF". `mode` is 0 for extract-and-expand,
/// 1 for extract only, 2 for expand only (EVP_KDF_HKDF_MODE_*).
int vault_hkdf_sha256(int mode,
                      const uint8_t *key, size_t key_len,
                      const uint8_t *salt, size_t salt_len,
                      const uint8_t *info, size_t info_len,
                      uint8_t *out, size_t out_len);

/// OPENSSL_cleanse behind a uint8_t pointer.
void vault_secure_zero(uint8_t *buffer, size_t length);

/// CRYPTO_memcmp behind uint8_t pointers: 0 when equal, in constant time.
int vault_constant_time_compare(const uint8_t *a, const uint8_t *b, size_t length);

/// Process hardening for tools that hold secrets: RLIMIT_CORE = 0 and
/// prctl(PR_SET_DUMPABLE, 0) (prctl is variadic, so Swift cannot call it).
/// Returns 0 on success, -1 when either call failed.
int vault_disable_core_dumps(void);

/// The POSIX access ACL of an open file (its "system.posix_acl_access" attribute); -1 when none.
long vault_posix_acl_access(int descriptor, void *buffer, unsigned long size);

/// Initialises libcrypto for a short-lived command: the system configuration (openssl.cnf:
/// providers, FIPS, default properties) is loaded as usual, but libcrypto's error strings are
/// not (about 1 M instructions per process); OpenSSL errors then carry their codes
/// ("error:1C800066:lib(56)::reason(102)"), which `openssl errstr` turns into text. Must be the
/// process's first libcrypto call. Returns VAULT_SHIM_OK, or VAULT_SHIM_ERROR.
int vault_crypto_init_for_command(void);

#endif
