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

// MARK: JWS signatures (signatures.c)

/// The JWS algorithms `vault_jws_verify` checks (RFC 7518 §3.3, §3.4, §3.5; RFC 8037).
#define VAULT_JWS_RS256 1
#define VAULT_JWS_PS256 2
#define VAULT_JWS_ES256 3
#define VAULT_JWS_EDDSA 4

/// `vault_jws_verify` for a key it will not use: RSA under 2048 or over 16384 bits, a P-256
/// point not on the curve, an Ed25519 key that is not 32 bytes.
#define VAULT_SHIM_KEY_REFUSED (-2)

/// Verifies a JWS signature of `message`. The public key is given as a JWK gives it:
/// RS256/PS256: `a` = modulus n, `b` = public exponent e (big-endian, unsigned);
/// ES256: `a` = x, `b` = y (32 bytes each; `signature` is the raw 64-byte r‖s of RFC 7518 §3.4);
/// EdDSA: `a` = the 32-byte Ed25519 public key, `b` unused.
/// PS256 uses MGF1-SHA-256 and a 32-byte salt. An RSA signature must be exactly the modulus
/// size. Returns VAULT_SHIM_OK when it verifies, VAULT_SHIM_AUTH_FAILED when it does not,
/// VAULT_SHIM_KEY_REFUSED, or VAULT_SHIM_ERROR (libcrypto failure, unknown algorithm).
int vault_jws_verify(int algorithm,
                     const uint8_t *a, size_t a_len,
                     const uint8_t *b, size_t b_len,
                     const uint8_t *message, size_t message_len,
                     const uint8_t *signature, size_t signature_len);

/// A new P-256 key pair from OpenSSL's generator: the private scalar `d` and the public point
/// (`x`, `y`), 32 bytes each. Returns VAULT_SHIM_OK or VAULT_SHIM_ERROR.
int vault_p256_generate(uint8_t *d, uint8_t *x, uint8_t *y);

/// An ES256 signature (ECDSA P-256 with SHA-256) of `message` as JWS wants it: the raw 64-byte
/// r‖s into `signature`. The key is `d`, `x`, `y` (32 bytes each; OpenSSL checks that they
/// belong together). Returns VAULT_SHIM_OK, VAULT_SHIM_KEY_REFUSED or VAULT_SHIM_ERROR.
int vault_es256_sign(const uint8_t *d, const uint8_t *x, const uint8_t *y,
                     const uint8_t *message, size_t message_len,
                     uint8_t *signature);

// MARK: Secret Service session crypto (secret_service.c)

struct evp_pkey_st;

/// The size of the RFC 2409 second Oakley group's prime (1024 bits), and so of the shared secret.
#define VAULT_DH_MODP1024_BYTES 128
/// The longest peer public key accepted: leading zero bytes are allowed up to this length.
#define VAULT_DH_MODP1024_MAX_PEER_BYTES 256
/// AES-128-CBC's key, IV and block size.
#define VAULT_AES128CBC_KEY_BYTES 16
#define VAULT_AES128CBC_BLOCK_BYTES 16

/// A fresh Diffie-Hellman key pair in the RFC 2409 second Oakley group (1024-bit MODP prime,
/// generator 2; a 1023-bit private value) from EVP_PKEY_keygen. NULL on failure. Free with vault_dh_free.
struct evp_pkey_st *vault_dh_modp1024_generate(void);

/// The same group's key pair for a given private value (big-endian, 0 < x < q), for
/// known-answer tests. NULL when refused or on failure. Free with vault_dh_free.
struct evp_pkey_st *vault_dh_modp1024_from_private(const uint8_t *private_key, size_t private_len);

/// The public value y = g^x mod p, big-endian without leading zeros (as libsecret and
/// gnome-keyring send it), into `out` (VAULT_DH_MODP1024_BYTES); its length into `out_len`.
int vault_dh_modp1024_public_key(const struct evp_pkey_st *key, uint8_t *out, size_t *out_len);

/// The shared secret with the peer's public value (big-endian, leading zeros allowed), padded
/// to VAULT_DH_MODP1024_BYTES with leading zeros into `secret`. Returns VAULT_SHIM_OK,
/// VAULT_SHIM_KEY_REFUSED (empty or over VAULT_DH_MODP1024_MAX_PEER_BYTES, not 1 < y < p - 1,
/// or y^q mod p != 1 for q = (p - 1) / 2) or VAULT_SHIM_ERROR; `secret` is wiped unless OK.
int vault_dh_modp1024_derive(const struct evp_pkey_st *key,
                             const uint8_t *peer, size_t peer_len,
                             uint8_t *secret);

/// Frees a key from vault_dh_modp1024_generate/_from_private (EVP_PKEY_free: the private
/// value is cleared).
void vault_dh_free(struct evp_pkey_st *key);

/// AES-128-CBC encryption with PKCS#7 padding (16-byte key and IV). `ciphertext` must hold
/// plaintext_len + 16 bytes; the length written goes to `ciphertext_len`.
/// Returns VAULT_SHIM_OK or VAULT_SHIM_ERROR.
int vault_aes128cbc_encrypt(const uint8_t *key, const uint8_t *iv,
                            const uint8_t *plaintext, size_t plaintext_len,
                            uint8_t *ciphertext, size_t *ciphertext_len);

/// AES-128-CBC decryption with PKCS#7 padding. `plaintext` must hold ciphertext_len + 16 bytes
/// and is wiped unless the result is VAULT_SHIM_OK. Returns VAULT_SHIM_AUTH_FAILED for a
/// length that is not a positive multiple of 16 or a bad padding, else OK or ERROR.
int vault_aes128cbc_decrypt(const uint8_t *key, const uint8_t *iv,
                            const uint8_t *ciphertext, size_t ciphertext_len,
                            uint8_t *plaintext, size_t *plaintext_len);

#endif
