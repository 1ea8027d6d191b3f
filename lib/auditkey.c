#include "auditkey.h"
#include "sha256.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/pem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static bool is_ed25519(EVP_PKEY *k)
{
    return k && EVP_PKEY_get_id(k) == EVP_PKEY_ED25519;
}

/* A key file must be ours alone: anyone else who can read it can forge checkpoints. */
static EVP_PKEY *read_private(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "re");
    if (!f) {
        snprintf(err, errlen, "audit key %s: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fileno(f), &st) < 0 || !S_ISREG(st.st_mode) || (st.st_mode & 077)) {
        snprintf(err, errlen, "audit key %s: not a regular file of mode 0600", path);
        fclose(f);
        return NULL;
    }
    EVP_PKEY *k = PEM_read_PrivateKey(f, NULL, NULL, NULL);
    fclose(f);
    if (!is_ed25519(k)) {
        EVP_PKEY_free(k);
        snprintf(err, errlen, "audit key %s: not an Ed25519 private key in PEM", path);
        return NULL;
    }
    return k;
}

EVP_PKEY *auditkey_load_or_create(const char *path, char *err, size_t errlen)
{
    if (access(path, F_OK) == 0)
        return read_private(path, err, errlen);
    EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
    if (!k) {
        snprintf(err, errlen, "cannot make an Ed25519 key");
        return NULL;
    }
    /* Written whole under a temporary name, then linked into place: a second process
     * making its own key at the same moment loses the link and reads the winner's. */
    char *tmp = xasprintf("%s.%ld.tmp", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    bool ok = f && PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL) == 1;
    if (f)
        ok = fclose(f) == 0 && ok;
    else if (fd >= 0)
        close(fd);
    int e = errno;
    if (ok && link(tmp, path) < 0 && errno != EEXIST) {
        e = errno;
        ok = false;
    }
    unlink(tmp);
    free(tmp);
    EVP_PKEY_free(k);
    if (!ok) {
        snprintf(err, errlen, "cannot write the audit key %s: %s", path, strerror(e));
        return NULL;
    }
    return read_private(path, err, errlen);
}

EVP_PKEY *auditkey_load(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "re");
    if (!f) {
        snprintf(err, errlen, "key %s: %s", path, strerror(errno));
        return NULL;
    }
    EVP_PKEY *k = PEM_read_PUBKEY(f, NULL, NULL, NULL);
    if (!k) {
        rewind(f);
        k = PEM_read_PrivateKey(f, NULL, NULL, NULL);
    }
    fclose(f);
    if (!is_ed25519(k)) {
        EVP_PKEY_free(k);
        snprintf(err, errlen, "key %s: not an Ed25519 key in PEM", path);
        return NULL;
    }
    return k;
}

bool auditkey_id(EVP_PKEY *k, char out[AUDITKEY_ID_LEN + 1])
{
    unsigned char raw[32], digest[SHA256_LEN];
    size_t len = sizeof(raw);
    if (EVP_PKEY_get_raw_public_key(k, raw, &len) != 1 || len != sizeof(raw) ||
        !sha256(raw, len, digest))
        return false;
    hex_encode(digest, AUDITKEY_ID_LEN / 2, out);
    out[AUDITKEY_ID_LEN] = '\0';
    return true;
}

char *auditkey_public_pem(EVP_PKEY *k)
{
    BIO *b = BIO_new(BIO_s_mem());
    char *out = NULL;
    if (b && PEM_write_bio_PUBKEY(b, k) == 1) {
        char *data;
        long n = BIO_get_mem_data(b, &data);
        if (n > 0) {
            out = xmalloc((size_t)n + 1);
            memcpy(out, data, (size_t)n);
            out[n] = '\0';
        }
    }
    BIO_free(b);
    return out;
}

bool auditkey_sign(EVP_PKEY *k, const void *msg, size_t len, unsigned char sig[AUDITKEY_SIG_LEN])
{
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    size_t siglen = AUDITKEY_SIG_LEN;
    bool ok = ctx && EVP_DigestSignInit(ctx, NULL, NULL, NULL, k) == 1 &&
              EVP_DigestSign(ctx, sig, &siglen, msg, len) == 1 && siglen == AUDITKEY_SIG_LEN;
    EVP_MD_CTX_free(ctx);
    return ok;
}

bool auditkey_verify(EVP_PKEY *k, const void *msg, size_t len, const unsigned char *sig,
                     size_t siglen)
{
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    bool ok = ctx && EVP_DigestVerifyInit(ctx, NULL, NULL, NULL, k) == 1 &&
              EVP_DigestVerify(ctx, sig, siglen, msg, len) == 1;
    EVP_MD_CTX_free(ctx);
    return ok;
}
