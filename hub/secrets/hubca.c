#include "hubca.h"
#include "filewrite.h"
#include "secret.h"
#include "util.h"
#include "x509ext.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define PEM_MAX (64 * 1024)
#define BUNDLE_MAX (16 * 1024 * 1024)

/* A new self-signed CA; its PEM texts (the key's in secret memory). */
static int make_ca(char **cert_pem, char **key_pem, char *err, size_t errlen)
{
    EVP_PKEY *key = EVP_EC_gen("P-256");
    X509 *x = X509_new();
    X509_NAME *name = X509_NAME_new();
    unsigned char serial[16];
    char host[64] = "", cn[160];
    gethostname(host, sizeof(host) - 1);
    snprintf(cn, sizeof(cn), "IsolateGPT-C hub CA (%.60s)", host[0] ? host : "localhost");
    bool ok = key && x && name && RAND_bytes(serial, sizeof(serial)) == 1;
    if (ok) {
        serial[0] &= 0x7f;
        BIGNUM *bn = BN_bin2bn(serial, sizeof(serial), NULL);
        ok = bn && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) != NULL;
        BN_free(bn);
    }
    ok = ok && X509_set_version(x, 2) == 1 && X509_gmtime_adj(X509_getm_notBefore(x), -3600) &&
         X509_gmtime_adj(X509_getm_notAfter(x), 10L * 365 * 86400) &&
         X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const unsigned char *)cn, -1, -1,
                                    0) == 1 &&
         X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, (const unsigned char *)"IsolateGPT-C",
                                    -1, -1, 0) == 1 &&
         X509_set_subject_name(x, name) == 1 && X509_set_issuer_name(x, name) == 1 &&
         X509_set_pubkey(x, key) == 1 &&
         x509_add_ext(x, x, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") &&
         x509_add_ext(x, x, NID_key_usage, "critical,keyCertSign,cRLSign") &&
         x509_add_ext(x, x, NID_subject_key_identifier, "hash") &&
         X509_sign(x, key, EVP_sha256()) > 0;
    BIO *cb = BIO_new(BIO_s_mem()), *kb = BIO_new(BIO_s_mem());
    ok = ok && cb && kb && PEM_write_bio_X509(cb, x) == 1 &&
         PEM_write_bio_PrivateKey(kb, key, NULL, NULL, 0, NULL, NULL) == 1;
    if (ok) {
        char *p;
        long n = BIO_get_mem_data(cb, &p);
        *cert_pem = xstrndup(p, (size_t)n);
        n = BIO_get_mem_data(kb, &p);
        *key_pem = secret_alloc((size_t)n + 1);
        memcpy(*key_pem, p, (size_t)n);
        explicit_bzero(p, (size_t)n);
    } else {
        unsigned long e = ERR_get_error();
        snprintf(err, errlen, "making the hub's CA: %s", e ? ERR_reason_error_string(e) : "failed");
    }
    BIO_free(cb);
    BIO_free(kb);
    X509_NAME_free(name);
    X509_free(x);
    EVP_PKEY_free(key);
    ERR_clear_error();
    return ok ? 0 : -1;
}

/* The whole of a regular file, at most max bytes (into secret memory when secret). */
static char *slurp(const char *path, size_t max, bool secret, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    struct stat st;
    if (fd < 0)
        return NULL;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size > max) {
        close(fd);
        errno = EFBIG;
        return NULL;
    }
    char *buf = secret ? secret_alloc((size_t)st.st_size + 1) : xmalloc((size_t)st.st_size + 1);
    ssize_t n = read_full(fd, buf, (size_t)st.st_size);
    close(fd);
    if (n < 0) {
        secret ? secret_free(buf) : free(buf);
        return NULL;
    }
    buf[n] = '\0';
    *len = (size_t)n;
    return buf;
}

/* The system's bundle with the CA added, made again when the system's is newer. */
static int ensure_bundle(struct hub_ca *ca, char *err, size_t errlen)
{
    struct stat sys, own;
    bool have_sys = stat(HUBCA_SYSTEM_BUNDLE, &sys) == 0;
    if (stat(ca->bundle_path, &own) == 0 && (!have_sys || own.st_mtime >= sys.st_mtime))
        return 0;
    size_t len = 0;
    char *system = have_sys ? slurp(HUBCA_SYSTEM_BUNDLE, BUNDLE_MAX, false, &len) : NULL;
    bool nl = len && system[len - 1] != '\n';
    char *tail = xasprintf("%s%s", nl ? "\n" : "", ca->cert_pem);
    int rc = file_write_atomic(ca->bundle_path, system ? system : "", len, tail, strlen(tail), 0644,
                               err, errlen);
    free(tail);
    free(system);
    return rc;
}

int hubca_load(const char *secrets_dir, struct hub_ca *ca, char *err, size_t errlen)
{
    memset(ca, 0, sizeof(*ca));
    char *dir = xasprintf("%s/ca", secrets_dir);
    char *key_path = xasprintf("%s/ca.key", dir);
    ca->cert_path = xasprintf("%s/ca.crt", dir);
    ca->bundle_path = xasprintf("%s/ca-bundle.crt", dir);
    int rc = -1, lock_fd = -1;
    struct stat st;
    if (mkdir_parents(secrets_dir, 0700) < 0 && errno != EEXIST) {
        snprintf(err, errlen, "%s: %s", secrets_dir, strerror(errno));
        goto out;
    }
    if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
        snprintf(err, errlen, "%s: %s", dir, strerror(errno));
        goto out;
    }
    if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
        (st.st_mode & 077)) {
        snprintf(err, errlen, "%s must be a directory of the hub's user, mode 0700", dir);
        goto out;
    }
    /* Hubs starting at once on one store: one makes the CA, the others wait and load
     * it (without the lock each made its own, and the key of one could land beside the
     * certificate of another). Released with the descriptor. */
    lock_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (lock_fd < 0 || flock(lock_fd, LOCK_EX) < 0) {
        snprintf(err, errlen, "locking %s: %s", dir, strerror(errno));
        goto out;
    }
    size_t n;
    ca->key_pem = slurp(key_path, PEM_MAX, true, &n);
    ca->cert_pem = ca->key_pem ? slurp(ca->cert_path, PEM_MAX, false, &n) : NULL;
    if (!ca->key_pem || !ca->cert_pem) {
        if (errno != ENOENT) {
            snprintf(err, errlen, "the hub's CA in %s: %s", dir, strerror(errno));
            goto out;
        }
        secret_free(ca->key_pem);
        free(ca->cert_pem);
        ca->key_pem = ca->cert_pem = NULL;
        if (make_ca(&ca->cert_pem, &ca->key_pem, err, errlen) < 0 ||
            file_write_atomic(key_path, ca->key_pem, strlen(ca->key_pem), NULL, 0, 0600, err,
                              errlen) < 0 ||
            file_write_atomic(ca->cert_path, ca->cert_pem, strlen(ca->cert_pem), NULL, 0, 0644, err,
                              errlen) < 0)
            goto out;
        unlink(ca->bundle_path); /* made again with the new CA */
    } else if (stat(key_path, &st) == 0 && (st.st_mode & 077)) {
        snprintf(err, errlen, "%s is open to other users; it must be 0600", key_path);
        goto out;
    }
    rc = ensure_bundle(ca, err, errlen);
out:
    if (lock_fd >= 0)
        close(lock_fd);
    free(dir);
    free(key_path);
    if (rc < 0)
        hubca_clear(ca);
    return rc;
}

void hubca_clear(struct hub_ca *ca)
{
    free(ca->cert_path);
    free(ca->bundle_path);
    free(ca->cert_pem);
    secret_free(ca->key_pem);
    memset(ca, 0, sizeof(*ca));
}
