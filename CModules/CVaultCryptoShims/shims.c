#include "CVaultCryptoShims.h"

#include <limits.h>
#include <string.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/xattr.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/params.h>

// Fetch the cipher and KDF implementations once: implicit fetching on every
// call costs a provider lookup each time.
static pthread_once_t fetch_once = PTHREAD_ONCE_INIT;
static EVP_CIPHER *aes256gcm_cipher = NULL;
static EVP_KDF *hkdf_kdf = NULL;

static void fetch_algorithms(void) {
    aes256gcm_cipher = EVP_CIPHER_fetch(NULL, "AES-256-GCM", NULL);
    hkdf_kdf = EVP_KDF_fetch(NULL, "HKDF", NULL);
}

static const EVP_CIPHER *aes256gcm(void) {
    pthread_once(&fetch_once, fetch_algorithms);
    // If the one-time fetch failed, fall back to the implicitly fetched cipher rather
    // than failing for the life of the process.
    return aes256gcm_cipher != NULL ? aes256gcm_cipher : EVP_aes_256_gcm();
}

// One AES-256-GCM context per thread, re-keyed for every message: creating and freeing a
// context per call costs about 10% of a 16 KiB seal. After each use the context is re-keyed
// with zeros, so no key schedule of ours outlives the call; a context that hit an error is
// freed and replaced.
static pthread_key_t context_key;
static pthread_once_t context_key_once = PTHREAD_ONCE_INIT;
static int context_key_ready = 0;

static void free_context(void *context) {
    EVP_CIPHER_CTX_free((EVP_CIPHER_CTX *)context);
}

static void make_context_key(void) {
    context_key_ready = pthread_key_create(&context_key, free_context) == 0;
}

/// The calling thread's context, set up for AES-256-GCM with a 12-byte IV, or NULL.
static EVP_CIPHER_CTX *thread_context(void) {
    pthread_once(&context_key_once, make_context_key);
    EVP_CIPHER_CTX *ctx = context_key_ready ? pthread_getspecific(context_key) : NULL;
    if (ctx != NULL) return ctx;
    const EVP_CIPHER *cipher = aes256gcm();
    if (cipher == NULL) return NULL;
    ctx = EVP_CIPHER_CTX_new();
    if (ctx == NULL) return NULL;
    if (EVP_CipherInit_ex(ctx, cipher, NULL, NULL, NULL, 1) != 1
        || EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_IVLEN, VAULT_AES256GCM_NONCE_BYTES, NULL) != 1
        || EVP_CIPHER_CTX_get_iv_length(ctx) != VAULT_AES256GCM_NONCE_BYTES) {
        EVP_CIPHER_CTX_free(ctx);
        return NULL;
    }
    if (context_key_ready && pthread_setspecific(context_key, ctx) != 0) {
        EVP_CIPHER_CTX_free(ctx);
        return NULL;
    }
    return ctx;
}

/// Ends a use of the thread's context: re-keys it with zeros when it is healthy, or frees
/// it (and forgets it) after an error so the next call starts from a fresh one.
static void release_context(EVP_CIPHER_CTX *ctx, int healthy) {
    static const uint8_t zero_key[VAULT_AES256GCM_KEY_BYTES] = {0};
    if (healthy && EVP_CipherInit_ex(ctx, NULL, NULL, zero_key, NULL, 1) == 1) return;
    if (context_key_ready && pthread_getspecific(context_key) == ctx) pthread_setspecific(context_key, NULL);
    EVP_CIPHER_CTX_free(ctx);
}

int vault_aes256ctr_xor(const uint8_t *key,
                        const uint8_t *counter_block,
                        const uint8_t *input, size_t length,
                        uint8_t *output) {
    if (key == NULL || counter_block == NULL || length > INT_MAX) return VAULT_SHIM_ERROR;
    if (length > 0 && (input == NULL || output == NULL)) return VAULT_SHIM_ERROR;
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    if (ctx == NULL) return VAULT_SHIM_ERROR;
    int result = VAULT_SHIM_ERROR;
    int len = 0;
    uint8_t final_block[16];
    if (EVP_EncryptInit_ex(ctx, EVP_aes_256_ctr(), NULL, key, counter_block) != 1) goto done;
    if (length > 0 && EVP_EncryptUpdate(ctx, output, &len, input, (int)length) != 1) goto done;
    if (EVP_EncryptFinal_ex(ctx, final_block, &len) != 1 || len != 0) goto done;  // a stream mode emits nothing here
    result = VAULT_SHIM_OK;
done:
    EVP_CIPHER_CTX_free(ctx);   // wipes the key schedule
    return result;
}

int vault_aes256gcm_seal(const uint8_t *key,
                         const uint8_t *nonce,
                         const uint8_t *aad, size_t aad_len,
                         const uint8_t *plaintext, size_t plaintext_len,
                         uint8_t *ciphertext,
                         uint8_t *tag) {
    if (key == NULL || nonce == NULL || tag == NULL) return VAULT_SHIM_ERROR;
    if (aad_len > INT_MAX || plaintext_len > INT_MAX) return VAULT_SHIM_ERROR;
    EVP_CIPHER_CTX *ctx = thread_context();
    if (ctx == NULL) return VAULT_SHIM_ERROR;
    int result = VAULT_SHIM_ERROR;
    int len = 0;
    uint8_t final_block[16];
    if (EVP_CipherInit_ex(ctx, NULL, NULL, key, nonce, 1) != 1) goto done;
    if (aad_len > 0 && EVP_EncryptUpdate(ctx, NULL, &len, aad, (int)aad_len) != 1) goto done;
    if (plaintext_len > 0 && EVP_EncryptUpdate(ctx, ciphertext, &len, plaintext, (int)plaintext_len) != 1) goto done;
    if (EVP_EncryptFinal_ex(ctx, final_block, &len) != 1 || len != 0) goto done;  // GCM emits nothing here
    if (EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, VAULT_AES256GCM_TAG_BYTES, tag) != 1) goto done;
    result = VAULT_SHIM_OK;
done:
    release_context(ctx, result == VAULT_SHIM_OK);
    return result;
}

int vault_aes256gcm_open(const uint8_t *key,
                         const uint8_t *nonce,
                         const uint8_t *aad, size_t aad_len,
                         const uint8_t *ciphertext, size_t ciphertext_len,
                         const uint8_t *tag,
                         uint8_t *plaintext) {
    if (key == NULL || nonce == NULL || tag == NULL) return VAULT_SHIM_ERROR;
    if (aad_len > INT_MAX || ciphertext_len > INT_MAX) return VAULT_SHIM_ERROR;
    EVP_CIPHER_CTX *ctx = thread_context();
    if (ctx == NULL) return VAULT_SHIM_ERROR;
    int result = VAULT_SHIM_ERROR;
    int len = 0;
    uint8_t final_block[16];
    // The tag is always exactly 16 bytes: OpenSSL would accept a shorter prefix.
    uint8_t tag_copy[VAULT_AES256GCM_TAG_BYTES];
    for (size_t i = 0; i < VAULT_AES256GCM_TAG_BYTES; i++) tag_copy[i] = tag[i];

    if (EVP_CipherInit_ex(ctx, NULL, NULL, key, nonce, 0) != 1) goto done;
    if (aad_len > 0 && EVP_DecryptUpdate(ctx, NULL, &len, aad, (int)aad_len) != 1) goto done;
    if (ciphertext_len > 0 && EVP_DecryptUpdate(ctx, plaintext, &len, ciphertext, (int)ciphertext_len) != 1) goto done;
    if (EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, VAULT_AES256GCM_TAG_BYTES, tag_copy) != 1) goto done;
    if (EVP_DecryptFinal_ex(ctx, final_block, &len) != 1) {
        result = VAULT_SHIM_AUTH_FAILED;
        goto done;
    }
    result = VAULT_SHIM_OK;
done:
    // Plaintext written before the tag check must never escape.
    if (result != VAULT_SHIM_OK && ciphertext_len > 0 && plaintext != NULL) {
        vault_secure_zero(plaintext, ciphertext_len);
    }
    // An authentication failure is a normal outcome: the context stays usable.
    release_context(ctx, result != VAULT_SHIM_ERROR);
    return result;
}

int vault_hkdf_sha256(int mode,
                      const uint8_t *key, size_t key_len,
                      const uint8_t *salt, size_t salt_len,
                      const uint8_t *info, size_t info_len,
                      uint8_t *out, size_t out_len) {
    pthread_once(&fetch_once, fetch_algorithms);
    if (hkdf_kdf == NULL || out == NULL) return VAULT_SHIM_ERROR;
    static const uint8_t empty = 0;
    EVP_KDF_CTX *ctx = EVP_KDF_CTX_new(hkdf_kdf);
    if (ctx == NULL) return VAULT_SHIM_ERROR;
    OSSL_PARAM params[6];
    size_t n = 0;
    params[n++] = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, (char *)"SHA256", 0);
    params[n++] = OSSL_PARAM_construct_int(OSSL_KDF_PARAM_MODE, &mode);
    params[n++] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY,
                      (void *)(key_len > 0 ? key : &empty), key_len);
    if (mode != EVP_KDF_HKDF_MODE_EXPAND_ONLY) {
        params[n++] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT,
                          (void *)(salt_len > 0 ? salt : &empty), salt_len);
    }
    if (mode != EVP_KDF_HKDF_MODE_EXTRACT_ONLY) {
        params[n++] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO,
                          (void *)(info_len > 0 ? info : &empty), info_len);
    }
    params[n] = OSSL_PARAM_construct_end();
    int rc = EVP_KDF_derive(ctx, out, out_len, params);
    EVP_KDF_CTX_free(ctx);
    return rc == 1 ? VAULT_SHIM_OK : VAULT_SHIM_ERROR;
}

void vault_secure_zero(uint8_t *buffer, size_t length) {
    // explicit_bzero (glibc 2.25+) is memset that the compiler may not remove; it is about six
    // times faster than OPENSSL_cleanse on 16 KiB here. OPENSSL_cleanse elsewhere.
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 25))
    if (buffer != NULL && length > 0) explicit_bzero(buffer, length);
#else
    if (buffer != NULL && length > 0) OPENSSL_cleanse(buffer, length);
#endif
}

int vault_constant_time_compare(const uint8_t *a, const uint8_t *b, size_t length) {
    if (length == 0) return 0;
    return CRYPTO_memcmp(a, b, length);
}

int vault_crypto_init_for_command(void) {
    uint64_t options = OPENSSL_INIT_LOAD_CONFIG | OPENSSL_INIT_NO_LOAD_CRYPTO_STRINGS;
    return OPENSSL_init_crypto(options, NULL) == 1 ? VAULT_SHIM_OK : VAULT_SHIM_ERROR;
}

int vault_disable_core_dumps(void) {
    int result = 0;
    struct rlimit none = {0, 0};
    if (setrlimit(RLIMIT_CORE, &none) != 0) result = -1;
#ifdef __linux__
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) result = -1;
#endif
    return result;
}

// The file's POSIX access ACL as the kernel stores it (the "system.posix_acl_access" extended
// attribute), for the check of systemd credentials; -1 with errno when there is none.
// <sys/xattr.h> is not in Swift's Glibc module, hence this shim.
long vault_posix_acl_access(int descriptor, void *buffer, unsigned long size) {
    return (long)fgetxattr(descriptor, "system.posix_acl_access", buffer, (size_t)size);
}
