// The floor for `vault add`: the cheapest process that durably writes one
// AES-256-GCM-encrypted record (libcrypto, raw 32-byte key, random nonce).
//
//   floor-add KEYFILE FILE < secret             open(O_TRUNC) → write → fsync: one fsynced record
//   floor-add --atomic KEYFILE FILE < secret    temp 0600 (O_EXCL|O_NOFOLLOW) → write → fsync →
//                                               rename → fsync(directory): the protocol vault uses
//
// FILE = nonce (12) ‖ ciphertext ‖ tag (16); `floor-get` reads it back. Exit 0 on success, 1 on failure.
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

enum { KEY = 32, NONCE = 12, TAG = 16, MAX = 1 << 20 };

static int write_all(int fd, const unsigned char *buf, size_t len) {
    while (len > 0) {
        ssize_t n = write(fd, buf, len);
        if (n <= 0) return -1;
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

int main(int argc, char **argv) {
    int atomic = argc == 4 && strcmp(argv[1], "--atomic") == 0;
    if (argc != 3 + atomic) { fprintf(stderr, "usage: floor-add [--atomic] KEYFILE FILE < secret\n"); return 1; }
    const char *key_path = argv[1 + atomic], *path = argv[2 + atomic];
    static unsigned char key[KEY + 1], plain[MAX], record[NONCE + MAX + TAG];

    int fd = open(key_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || read(fd, key, sizeof key) != KEY) { fprintf(stderr, "floor-add: bad key file\n"); return 1; }
    close(fd);
    size_t plain_len = 0;
    for (ssize_t n; (n = read(STDIN_FILENO, plain + plain_len, MAX - plain_len)) > 0;) plain_len += (size_t)n;
    if (plain_len == 0) { fprintf(stderr, "floor-add: empty secret\n"); return 1; }

    int len = 0, ok = 0;
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    if (ctx != NULL && RAND_bytes(record, NONCE) == 1
        && EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, key, record) == 1
        && EVP_EncryptUpdate(ctx, record + NONCE, &len, plain, (int)plain_len) == 1
        && EVP_EncryptFinal_ex(ctx, record + NONCE + len, &len) == 1
        && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, TAG, record + NONCE + plain_len) == 1) {
        ok = 1;
    }
    EVP_CIPHER_CTX_free(ctx);
    OPENSSL_cleanse(key, sizeof key);
    OPENSSL_cleanse(plain, plain_len);
    if (!ok) { fprintf(stderr, "floor-add: encryption failed\n"); return 1; }
    size_t record_len = NONCE + plain_len + TAG;

    if (!atomic) {
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0 || write_all(fd, record, record_len) != 0 || fsync(fd) != 0 || close(fd) != 0) {
            perror("floor-add");
            return 1;
        }
        return 0;
    }

    char temp[4096], dir_buf[4096];
    unsigned char suffix[8];
    if (RAND_bytes(suffix, sizeof suffix) != 1) return 1;
    snprintf(dir_buf, sizeof dir_buf, "%s", path);
    const char *dir = dirname(dir_buf);
    snprintf(temp, sizeof temp, "%s/.floor.tmp.%02x%02x%02x%02x%02x%02x%02x%02x", dir, suffix[0], suffix[1], suffix[2],
             suffix[3], suffix[4], suffix[5], suffix[6], suffix[7]);
    fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 || write_all(fd, record, record_len) != 0 || fsync(fd) != 0 || close(fd) != 0
        || rename(temp, path) != 0) {
        perror("floor-add");
        unlink(temp);
        return 1;
    }
    int dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd < 0 || fsync(dir_fd) != 0 || close(dir_fd) != 0) { perror("floor-add: directory"); return 1; }
    return 0;
}
