// JWS signatures through OpenSSL 3's EVP interface: verification of RS256, PS256, ES256 and
// EdDSA (ID tokens, RFC 7515/7518/8037), and ES256 signing with a P-256 key (DPoP proofs,
// RFC 9449). Keys are built from their JWK members with EVP_PKEY_fromdata; the JWS form of an
// ECDSA signature (raw r‖s) is converted to and from OpenSSL's DER here.
#include "CVaultCryptoShims.h"

#include <string.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/rsa.h>

#define P256_COORDINATE_BYTES 32
#define RSA_MINIMUM_BITS 2048
#define RSA_MAXIMUM_BITS 16384

// An EVP_PKEY from OSSL_PARAMs built by `bld`; NULL on failure. `selection` is
// EVP_PKEY_PUBLIC_KEY or EVP_PKEY_KEYPAIR.
static EVP_PKEY *key_from_params(const char *type, OSSL_PARAM_BLD *bld, int selection) {
    EVP_PKEY *pkey = NULL;
    OSSL_PARAM *params = OSSL_PARAM_BLD_to_param(bld);
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, type, NULL);
    if (params == NULL || ctx == NULL || EVP_PKEY_fromdata_init(ctx) != 1
        || EVP_PKEY_fromdata(ctx, &pkey, selection, params) != 1) {
        EVP_PKEY_free(pkey);
        pkey = NULL;
    }
    EVP_PKEY_CTX_free(ctx);
    OSSL_PARAM_free(params);
    return pkey;
}

static EVP_PKEY *rsa_public_key(const uint8_t *n, size_t n_len, const uint8_t *e, size_t e_len, int *refused) {
    if (n == NULL || e == NULL || n_len == 0 || e_len == 0 || n_len > RSA_MAXIMUM_BITS / 8 + 1 || e_len > 8) {
        *refused = 1;
        return NULL;
    }
    EVP_PKEY *pkey = NULL;
    BIGNUM *modulus = BN_bin2bn(n, (int)n_len, NULL);
    BIGNUM *exponent = BN_bin2bn(e, (int)e_len, NULL);
    OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
    if (modulus == NULL || exponent == NULL || bld == NULL) goto done;
    int bits = BN_num_bits(modulus);
    if (bits < RSA_MINIMUM_BITS || bits > RSA_MAXIMUM_BITS || !BN_is_odd(exponent) || BN_is_one(exponent)) {
        *refused = 1;
        goto done;
    }
    if (OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, modulus) != 1
        || OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, exponent) != 1) goto done;
    pkey = key_from_params("RSA", bld, EVP_PKEY_PUBLIC_KEY);
done:
    OSSL_PARAM_BLD_free(bld);
    BN_free(modulus);
    BN_free(exponent);
    return pkey;
}

// A P-256 key: public when `d` is NULL, else the pair. OpenSSL refuses a point off the curve.
static EVP_PKEY *p256_key(const uint8_t *d, const uint8_t *x, const uint8_t *y) {
    uint8_t point[1 + 2 * P256_COORDINATE_BYTES];
    point[0] = 0x04;   // uncompressed (SEC 1 §2.3.3)
    memcpy(point + 1, x, P256_COORDINATE_BYTES);
    memcpy(point + 1 + P256_COORDINATE_BYTES, y, P256_COORDINATE_BYTES);
    EVP_PKEY *pkey = NULL;
    BIGNUM *scalar = NULL;
    OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
    if (bld == NULL) goto done;
    if (OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME, "prime256v1", 0) != 1
        || OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, point, sizeof point) != 1) goto done;
    if (d != NULL) {
        scalar = BN_secure_new();
        if (scalar == NULL || BN_bin2bn(d, P256_COORDINATE_BYTES, scalar) == NULL
            || OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_PRIV_KEY, scalar) != 1) goto done;
    }
    pkey = key_from_params("EC", bld, d != NULL ? EVP_PKEY_KEYPAIR : EVP_PKEY_PUBLIC_KEY);
    if (pkey != NULL) {
        // fromdata takes the members as given; the checks say whether they make a valid key.
        EVP_PKEY_CTX *check = EVP_PKEY_CTX_new_from_pkey(NULL, pkey, NULL);
        int valid = check != NULL && (d != NULL ? EVP_PKEY_pairwise_check(check) : EVP_PKEY_public_check(check)) == 1;
        EVP_PKEY_CTX_free(check);
        if (!valid) {
            EVP_PKEY_free(pkey);
            pkey = NULL;
        }
    }
done:
    OSSL_PARAM_BLD_free(bld);   // frees its copy of the scalar securely (BN_secure_new)
    BN_clear_free(scalar);
    return pkey;
}

// The DER ECDSA-Sig-Value of a raw r‖s, or NULL; *der_len its length.
static unsigned char *ecdsa_der_from_raw(const uint8_t *raw, int *der_len) {
    ECDSA_SIG *sig = ECDSA_SIG_new();
    BIGNUM *r = BN_bin2bn(raw, P256_COORDINATE_BYTES, NULL);
    BIGNUM *s = BN_bin2bn(raw + P256_COORDINATE_BYTES, P256_COORDINATE_BYTES, NULL);
    unsigned char *der = NULL;
    if (sig == NULL || r == NULL || s == NULL || ECDSA_SIG_set0(sig, r, s) != 1) {
        BN_free(r);
        BN_free(s);
        ECDSA_SIG_free(sig);
        return NULL;
    }
    *der_len = i2d_ECDSA_SIG(sig, &der);
    ECDSA_SIG_free(sig);   // frees r and s
    if (*der_len <= 0) {
        OPENSSL_free(der);
        return NULL;
    }
    return der;
}

int vault_jws_verify(int algorithm,
                     const uint8_t *a, size_t a_len,
                     const uint8_t *b, size_t b_len,
                     const uint8_t *message, size_t message_len,
                     const uint8_t *signature, size_t signature_len) {
    if (message == NULL && message_len > 0) return VAULT_SHIM_ERROR;
    if (signature == NULL || signature_len == 0) return VAULT_SHIM_AUTH_FAILED;
    int refused = 0;
    EVP_PKEY *pkey = NULL;
    const EVP_MD *digest = EVP_sha256();
    switch (algorithm) {
    case VAULT_JWS_RS256:
    case VAULT_JWS_PS256:
        pkey = rsa_public_key(a, a_len, b, b_len, &refused);
        break;
    case VAULT_JWS_ES256:
        if (a == NULL || b == NULL || a_len != P256_COORDINATE_BYTES || b_len != P256_COORDINATE_BYTES) {
            refused = 1;
            break;
        }
        pkey = p256_key(NULL, a, b);
        if (pkey == NULL) refused = 1;
        break;
    case VAULT_JWS_EDDSA:
        if (a == NULL || a_len != 32) {
            refused = 1;
            break;
        }
        pkey = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, a, a_len);
        if (pkey == NULL) refused = 1;
        digest = NULL;   // Ed25519 hashes internally (one-shot only)
        break;
    default:
        return VAULT_SHIM_ERROR;
    }
    if (pkey == NULL) {
        ERR_clear_error();
        return refused ? VAULT_SHIM_KEY_REFUSED : VAULT_SHIM_ERROR;
    }

    int result = VAULT_SHIM_ERROR;
    unsigned char *der = NULL;
    const unsigned char *to_verify = signature;
    size_t to_verify_len = signature_len;
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    EVP_PKEY_CTX *pctx = NULL;
    if (md == NULL) goto done;
    if (algorithm == VAULT_JWS_RS256 || algorithm == VAULT_JWS_PS256) {
        if ((int)signature_len != EVP_PKEY_get_size(pkey)) {
            result = VAULT_SHIM_AUTH_FAILED;
            goto done;
        }
    } else if (algorithm == VAULT_JWS_ES256) {
        // JWS sends r‖s, 32 bytes each (RFC 7518 §3.4); any other length is refused.
        if (signature_len != 2 * P256_COORDINATE_BYTES) {
            result = VAULT_SHIM_AUTH_FAILED;
            goto done;
        }
        int der_len = 0;
        der = ecdsa_der_from_raw(signature, &der_len);
        if (der == NULL) goto done;
        to_verify = der;
        to_verify_len = (size_t)der_len;
    } else if (signature_len != 64) {
        result = VAULT_SHIM_AUTH_FAILED;
        goto done;
    }
    if (EVP_DigestVerifyInit(md, &pctx, digest, NULL, pkey) != 1) goto done;
    if (algorithm == VAULT_JWS_PS256) {
        if (EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING) != 1
            || EVP_PKEY_CTX_set_rsa_mgf1_md(pctx, EVP_sha256()) != 1
            || EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, 32) != 1) goto done;
    }
    // 1 verifies; 0 or a negative value for a signature that does not (a malformed one
    // included) once the key and the context were fine.
    result = EVP_DigestVerify(md, to_verify, to_verify_len, message, message_len) == 1
        ? VAULT_SHIM_OK : VAULT_SHIM_AUTH_FAILED;
done:
    ERR_clear_error();
    OPENSSL_free(der);
    EVP_MD_CTX_free(md);   // frees pctx
    EVP_PKEY_free(pkey);
    return result;
}

static int export_coordinate(const EVP_PKEY *pkey, const char *name, uint8_t *out) {
    BIGNUM *value = NULL;
    int ok = EVP_PKEY_get_bn_param(pkey, name, &value) == 1
        && BN_bn2binpad(value, out, P256_COORDINATE_BYTES) == P256_COORDINATE_BYTES;
    BN_clear_free(value);
    return ok;
}

int vault_p256_generate(uint8_t *d, uint8_t *x, uint8_t *y) {
    if (d == NULL || x == NULL || y == NULL) return VAULT_SHIM_ERROR;
    EVP_PKEY *pkey = EVP_EC_gen("P-256");
    if (pkey == NULL) return VAULT_SHIM_ERROR;
    int ok = export_coordinate(pkey, OSSL_PKEY_PARAM_PRIV_KEY, d)
        && export_coordinate(pkey, OSSL_PKEY_PARAM_EC_PUB_X, x)
        && export_coordinate(pkey, OSSL_PKEY_PARAM_EC_PUB_Y, y);
    EVP_PKEY_free(pkey);
    if (!ok) {
        OPENSSL_cleanse(d, P256_COORDINATE_BYTES);
        ERR_clear_error();
    }
    return ok ? VAULT_SHIM_OK : VAULT_SHIM_ERROR;
}

int vault_es256_sign(const uint8_t *d, const uint8_t *x, const uint8_t *y,
                     const uint8_t *message, size_t message_len,
                     uint8_t *signature) {
    if (d == NULL || x == NULL || y == NULL || signature == NULL) return VAULT_SHIM_ERROR;
    if (message == NULL && message_len > 0) return VAULT_SHIM_ERROR;
    EVP_PKEY *pkey = p256_key(d, x, y);
    if (pkey == NULL) {
        ERR_clear_error();
        return VAULT_SHIM_KEY_REFUSED;
    }
    int result = VAULT_SHIM_ERROR;
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    unsigned char der[80];   // an ECDSA-Sig-Value of P-256 is at most 72 bytes
    size_t der_len = sizeof der;
    ECDSA_SIG *sig = NULL;
    if (md == NULL || EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, pkey) != 1
        || EVP_DigestSign(md, der, &der_len, message, message_len) != 1) goto done;
    const unsigned char *cursor = der;
    sig = d2i_ECDSA_SIG(NULL, &cursor, (long)der_len);
    if (sig == NULL) goto done;
    if (BN_bn2binpad(ECDSA_SIG_get0_r(sig), signature, P256_COORDINATE_BYTES) != P256_COORDINATE_BYTES
        || BN_bn2binpad(ECDSA_SIG_get0_s(sig), signature + P256_COORDINATE_BYTES, P256_COORDINATE_BYTES)
            != P256_COORDINATE_BYTES) goto done;
    result = VAULT_SHIM_OK;
done:
    if (result != VAULT_SHIM_OK) ERR_clear_error();
    ECDSA_SIG_free(sig);
    EVP_MD_CTX_free(md);
    EVP_PKEY_free(pkey);   // frees the private key securely
    return result;
}
