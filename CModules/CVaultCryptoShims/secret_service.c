// The freedesktop Secret Service session algorithm "dh-ietf1024-sha256-aes128-cbc-pkcs7":
// Diffie-Hellman in the second Oakley group (RFC 2409 §6.2: 1024-bit MODP, generator 2) and
// AES-128-CBC with PKCS#7 padding, both through OpenSSL 3's EVP interface. The HKDF-SHA256
// step is vault_hkdf_sha256 (shims.c), called from Swift.
#include "CVaultCryptoShims.h"

#include <limits.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/dh.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>

// Pushes the group's domain parameters p and g = 2 and makes q = (p - 1) / 2 (the prime is a
// safe prime). q is not given to OpenSSL: with q, OpenSSL 3 generates keys the FIPS 186-4 way,
// which refuses a 1024-bit group (80-bit strength, under its 112-bit floor). Without it, the
// private value has 1023 bits (BN_priv_rand_ex), as libsecret's has.
static int push_group(OSSL_PARAM_BLD *bld, BIGNUM **p_out, BIGNUM **q_out, BIGNUM **g_out) {
    BIGNUM *p = BN_get_rfc2409_prime_1024(NULL);
    BIGNUM *q = BN_new();
    BIGNUM *g = BN_new();
    *p_out = p;
    *q_out = q;
    *g_out = g;
    if (p == NULL || q == NULL || g == NULL) return 0;
    if (BN_rshift1(q, p) != 1 || BN_set_word(g, 2) != 1) return 0;
    return OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_FFC_P, p) == 1
        && OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_FFC_G, g) == 1;
}

// A "DH" EVP_PKEY from `bld`'s parameters; NULL on failure.
static EVP_PKEY *dh_from_params(OSSL_PARAM_BLD *bld, int selection) {
    EVP_PKEY *pkey = NULL;
    OSSL_PARAM *params = OSSL_PARAM_BLD_to_param(bld);
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, "DH", NULL);
    if (params == NULL || ctx == NULL || EVP_PKEY_fromdata_init(ctx) != 1
        || EVP_PKEY_fromdata(ctx, &pkey, selection, params) != 1) {
        EVP_PKEY_free(pkey);
        pkey = NULL;
    }
    EVP_PKEY_CTX_free(ctx);
    // A private value pushed from a secure BIGNUM sits in the array's secure part, which
    // OSSL_PARAM_free clears before freeing it (CRYPTO_secure_clear_free).
    OSSL_PARAM_free(params);
    return pkey;
}

struct evp_pkey_st *vault_dh_modp1024_generate(void) {
    EVP_PKEY *domain = NULL, *key = NULL;
    EVP_PKEY_CTX *ctx = NULL;
    BIGNUM *p = NULL, *q = NULL, *g = NULL;
    OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
    if (bld == NULL || !push_group(bld, &p, &q, &g)) goto done;
    domain = dh_from_params(bld, EVP_PKEY_KEY_PARAMETERS);
    if (domain == NULL) goto done;
    ctx = EVP_PKEY_CTX_new_from_pkey(NULL, domain, NULL);
    if (ctx == NULL || EVP_PKEY_keygen_init(ctx) != 1 || EVP_PKEY_keygen(ctx, &key) != 1) {
        EVP_PKEY_free(key);
        key = NULL;
    }
done:
    EVP_PKEY_CTX_free(ctx);
    EVP_PKEY_free(domain);
    OSSL_PARAM_BLD_free(bld);
    BN_free(p);
    BN_free(q);
    BN_free(g);
    return key;
}

struct evp_pkey_st *vault_dh_modp1024_from_private(const uint8_t *private_key, size_t private_len) {
    if (private_key == NULL || private_len == 0 || private_len > VAULT_DH_MODP1024_BYTES) return NULL;
    EVP_PKEY *key = NULL;
    BIGNUM *p = NULL, *q = NULL, *g = NULL;
    BIGNUM *x = BN_secure_new();
    BIGNUM *y = BN_new();
    BN_CTX *bn_ctx = BN_CTX_secure_new();
    OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
    if (x == NULL || y == NULL || bn_ctx == NULL || bld == NULL || !push_group(bld, &p, &q, &g)) goto done;
    if (BN_bin2bn(private_key, (int)private_len, x) == NULL || BN_is_zero(x) || BN_cmp(x, q) >= 0) goto done;
    BN_set_flags(x, BN_FLG_CONSTTIME);
    if (BN_mod_exp(y, g, x, p, bn_ctx) != 1) goto done;
    if (OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_PRIV_KEY, x) != 1
        || OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_PUB_KEY, y) != 1) goto done;
    key = dh_from_params(bld, EVP_PKEY_KEYPAIR);
done:
    OSSL_PARAM_BLD_free(bld);
    BN_CTX_free(bn_ctx);
    BN_clear_free(x);
    BN_free(y);
    BN_free(p);
    BN_free(q);
    BN_free(g);
    return key;
}

int vault_dh_modp1024_public_key(const struct evp_pkey_st *key, uint8_t *out, size_t *out_len) {
    if (key == NULL || out == NULL || out_len == NULL) return VAULT_SHIM_ERROR;
    BIGNUM *y = NULL;
    int result = VAULT_SHIM_ERROR;
    if (EVP_PKEY_get_bn_param(key, OSSL_PKEY_PARAM_PUB_KEY, &y) != 1) goto done;
    int length = BN_num_bytes(y);
    if (length <= 0 || length > VAULT_DH_MODP1024_BYTES) goto done;
    if (BN_bn2bin(y, out) != length) goto done;
    *out_len = (size_t)length;
    result = VAULT_SHIM_OK;
done:
    BN_free(y);
    return result;
}

int vault_dh_modp1024_derive(const struct evp_pkey_st *key,
                             const uint8_t *peer, size_t peer_len,
                             uint8_t *secret) {
    if (key == NULL || secret == NULL) return VAULT_SHIM_ERROR;
    // Leading zero bytes are accepted (libgcrypt's and GnuTLS's importers accept them); the
    // value itself must be 1 < y < p - 1 (DH_check_pub_key's range, checked here so that the
    // answer is "refused", not an error) and in the subgroup of order q that g generates:
    // y^q mod p = 1, the check OpenSSL's DH_check_pub_key makes when it knows q.
    if (peer == NULL || peer_len == 0 || peer_len > VAULT_DH_MODP1024_MAX_PEER_BYTES) return VAULT_SHIM_KEY_REFUSED;
    int result = VAULT_SHIM_ERROR;
    size_t length = VAULT_DH_MODP1024_BYTES;
    BIGNUM *p = NULL, *q = NULL, *g = NULL;
    BIGNUM *y = BN_bin2bn(peer, (int)peer_len, NULL);
    BIGNUM *p_minus_1 = BN_new();
    BIGNUM *power = BN_new();
    BN_CTX *bn_ctx = BN_CTX_new();
    OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
    EVP_PKEY *peer_key = NULL;
    EVP_PKEY_CTX *derive = NULL;
    if (y == NULL || p_minus_1 == NULL || power == NULL || bn_ctx == NULL || bld == NULL
        || !push_group(bld, &p, &q, &g)) goto done;
    if (BN_copy(p_minus_1, p) == NULL || BN_sub_word(p_minus_1, 1) != 1) goto done;
    if (BN_cmp(y, BN_value_one()) <= 0 || BN_cmp(y, p_minus_1) >= 0) {
        result = VAULT_SHIM_KEY_REFUSED;
        goto done;
    }
    if (BN_mod_exp(power, y, q, p, bn_ctx) != 1) goto done;
    if (!BN_is_one(power)) {
        result = VAULT_SHIM_KEY_REFUSED;
        goto done;
    }
    if (OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_PUB_KEY, y) != 1) goto done;
    peer_key = dh_from_params(bld, EVP_PKEY_PUBLIC_KEY);
    if (peer_key == NULL) goto done;
    derive = EVP_PKEY_CTX_new_from_pkey(NULL, (EVP_PKEY *)key, NULL);
    // Padded to the prime's 128 bytes with leading zeros, as libsecret's and gnome-keyring's
    // egg_dh_gen_secret write it before HKDF (EVP_PKEY_CTX_set_dh_pad).
    if (derive == NULL || EVP_PKEY_derive_init(derive) != 1 || EVP_PKEY_CTX_set_dh_pad(derive, 1) != 1
        || EVP_PKEY_derive_set_peer(derive, peer_key) != 1
        || EVP_PKEY_derive(derive, secret, &length) != 1 || length != VAULT_DH_MODP1024_BYTES) {
        vault_secure_zero(secret, VAULT_DH_MODP1024_BYTES);
        goto done;
    }
    result = VAULT_SHIM_OK;
done:
    EVP_PKEY_CTX_free(derive);
    EVP_PKEY_free(peer_key);
    OSSL_PARAM_BLD_free(bld);
    BN_CTX_free(bn_ctx);
    BN_free(y);
    BN_free(power);
    BN_free(p_minus_1);
    BN_free(p);
    BN_free(q);
    BN_free(g);
    return result;
}

void vault_dh_free(struct evp_pkey_st *key) {
    EVP_PKEY_free(key);   // the DH private value is freed with BN_clear_free
}

// One AES-128-CBC pass with PKCS#7 padding; `encrypt` is 1 or 0. `output` must hold
// input_len + 16 bytes; a bad padding on decryption returns AUTH_FAILED.
static int aes128cbc(int encrypt, const uint8_t *key, const uint8_t *iv,
                     const uint8_t *input, size_t input_len,
                     uint8_t *output, size_t *output_len) {
    if (key == NULL || iv == NULL || output == NULL || output_len == NULL) return VAULT_SHIM_ERROR;
    if (input_len > INT_MAX - VAULT_AES128CBC_BLOCK_BYTES || (input_len > 0 && input == NULL)) return VAULT_SHIM_ERROR;
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    if (ctx == NULL) return VAULT_SHIM_ERROR;
    int result = VAULT_SHIM_ERROR;
    int len = 0, final_len = 0;
    if (EVP_CipherInit_ex(ctx, EVP_aes_128_cbc(), NULL, key, iv, encrypt) != 1) goto done;
    if (EVP_CIPHER_CTX_set_padding(ctx, 1) != 1) goto done;
    if (input_len > 0 && EVP_CipherUpdate(ctx, output, &len, input, (int)input_len) != 1) goto done;
    if (EVP_CipherFinal_ex(ctx, output + len, &final_len) != 1) {
        result = encrypt ? VAULT_SHIM_ERROR : VAULT_SHIM_AUTH_FAILED;
        goto done;
    }
    *output_len = (size_t)len + (size_t)final_len;
    result = VAULT_SHIM_OK;
done:
    EVP_CIPHER_CTX_free(ctx);   // wipes the key schedule
    return result;
}

int vault_aes128cbc_encrypt(const uint8_t *key, const uint8_t *iv,
                            const uint8_t *plaintext, size_t plaintext_len,
                            uint8_t *ciphertext, size_t *ciphertext_len) {
    return aes128cbc(1, key, iv, plaintext, plaintext_len, ciphertext, ciphertext_len);
}

int vault_aes128cbc_decrypt(const uint8_t *key, const uint8_t *iv,
                            const uint8_t *ciphertext, size_t ciphertext_len,
                            uint8_t *plaintext, size_t *plaintext_len) {
    if (ciphertext_len == 0 || ciphertext_len % VAULT_AES128CBC_BLOCK_BYTES != 0) return VAULT_SHIM_AUTH_FAILED;
    int result = aes128cbc(0, key, iv, ciphertext, ciphertext_len, plaintext, plaintext_len);
    // Blocks written before the padding check must never escape.
    if (result != VAULT_SHIM_OK && plaintext != NULL) vault_secure_zero(plaintext, ciphertext_len + VAULT_AES128CBC_BLOCK_BYTES);
    return result;
}
