// The floor for `vault get`: the cheapest process that reads one file and
// AES-256-GCM-decrypts it (1 KiB) with libcrypto and a raw 32-byte key.
//
//   floor-get KEYFILE FILE > plaintext      FILE = nonce (12) ‖ ciphertext ‖ tag (16)
//
// libcrypto is initialised the default way, reading the system openssl.cnf as
// every OpenSSL 3 program (vault included) does. Built with -DFLOOR_NO_CONFIG it
// skips the config file (OPENSSL_INIT_NO_LOAD_CONFIG), which shows what that costs.
// `floor-add` writes FILE. Exit 0 on success, 1 on any failure.
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

enum { KEY = 32, NONCE = 12, TAG = 16, MAX = 1 << 20 };

static long read_all(const char *path, unsigned char *buf, long cap) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    long total = 0;
    for (;;) {
        ssize_t n = read(fd, buf + total, (size_t)(cap - total));
        if (n < 0) { close(fd); return -1; }
        if (n == 0) break;
        total += n;
        if (total == cap) break;
    }
    close(fd);
    return total;
}

int main(int argc, char **argv) {
    if (argc != 3) { fprintf(stderr, "usage: floor-get KEYFILE FILE\n"); return 1; }
#ifdef FLOOR_NO_CONFIG
    if (OPENSSL_init_crypto(OPENSSL_INIT_NO_LOAD_CONFIG, NULL) != 1) return 1;
#endif
    static unsigned char key[KEY + 1], file[MAX], plain[MAX];
    if (read_all(argv[1], key, sizeof key) != KEY) { fprintf(stderr, "floor-get: bad key file\n"); return 1; }
    long size = read_all(argv[2], file, MAX);
    if (size < NONCE + TAG) { fprintf(stderr, "floor-get: bad file\n"); return 1; }
    int ct_len = (int)(size - NONCE - TAG), len = 0, ok = 0;

    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    if (ctx != NULL
        && EVP_DecryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, key, file) == 1
        && EVP_DecryptUpdate(ctx, plain, &len, file + NONCE, ct_len) == 1
        && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, TAG, file + NONCE + ct_len) == 1
        && EVP_DecryptFinal_ex(ctx, plain + len, &len) == 1) {
        ok = write(STDOUT_FILENO, plain, (size_t)ct_len) == ct_len;
    }
    EVP_CIPHER_CTX_free(ctx);
    OPENSSL_cleanse(key, sizeof key);
    OPENSSL_cleanse(plain, (size_t)ct_len);
    if (!ok) { fprintf(stderr, "floor-get: decryption failed\n"); return 1; }
    return 0;
}
