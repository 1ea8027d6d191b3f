#include "tlsca.h"

#include "util.h"
#include "x509ext.h"

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define CACHE_SIZE 256
#define LEAF_DAYS 30
#define LEAF_REUSE_S (24 * 3600)

struct leaf {
    char host[254];
    X509 *cert;
    time_t made;
    unsigned long use; /* for eviction: the least recently used goes */
};

struct tlsca {
    X509 *cert;
    EVP_PKEY *key;
    EVP_PKEY *leaf_key;
    char fingerprint[65];
    pthread_mutex_t lock;
    struct leaf cache[CACHE_SIZE];
    unsigned long clock;
};

static void ssl_error(char *err, size_t errlen, const char *what)
{
    unsigned long e = ERR_get_error();
    char buf[200] = "";
    if (e)
        ERR_error_string_n(e, buf, sizeof(buf));
    snprintf(err, errlen, "%s%s%s", what, buf[0] ? ": " : "", buf);
    ERR_clear_error();
}

struct tlsca *tlsca_new(const char *cert_pem, size_t cert_len, const char *key_pem, size_t key_len,
                        char *err, size_t errlen)
{
    struct tlsca *ca = xcalloc(1, sizeof(*ca));
    BIO *b = BIO_new_mem_buf(cert_pem, (int)cert_len);
    ca->cert = b ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
    BIO_free(b);
    b = BIO_new_mem_buf(key_pem, (int)key_len);
    ca->key = b ? PEM_read_bio_PrivateKey(b, NULL, NULL, NULL) : NULL;
    BIO_free(b);
    if (!ca->cert || !ca->key) {
        ssl_error(err, errlen,
                  ca->cert ? "the CA key is not a PEM private key"
                           : "the CA certificate is not PEM");
        goto fail;
    }
    if (X509_check_private_key(ca->cert, ca->key) != 1) {
        ssl_error(err, errlen, "the CA key does not belong to its certificate");
        goto fail;
    }
    if (X509_check_ca(ca->cert) != 1) {
        snprintf(err, errlen, "the CA certificate is not a CA (basicConstraints)");
        goto fail;
    }
    /* One P-256 key for every leaf: a signature per host, no key generation per
     * tunnel. */
    ca->leaf_key = EVP_EC_gen("P-256");
    if (!ca->leaf_key) {
        ssl_error(err, errlen, "making the leaf key");
        goto fail;
    }
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned mdlen = 0;
    X509_digest(ca->cert, EVP_sha256(), md, &mdlen);
    hex_encode(md, mdlen, ca->fingerprint);
    pthread_mutex_init(&ca->lock, NULL);
    return ca;
fail:
    X509_free(ca->cert);
    EVP_PKEY_free(ca->key);
    free(ca);
    return NULL;
}

void tlsca_free(struct tlsca *ca)
{
    if (!ca)
        return;
    for (size_t i = 0; i < CACHE_SIZE; i++)
        X509_free(ca->cache[i].cert);
    X509_free(ca->cert);
    EVP_PKEY_free(ca->key);
    EVP_PKEY_free(ca->leaf_key);
    pthread_mutex_destroy(&ca->lock);
    free(ca);
}

const char *tlsca_fingerprint(const struct tlsca *ca)
{
    return ca->fingerprint;
}

static X509 *make_leaf(struct tlsca *ca, const char *host)
{
    X509 *x = X509_new();
    unsigned char serial[16];
    bool ok = x && RAND_bytes(serial, sizeof(serial)) == 1;
    if (ok) {
        serial[0] &= 0x7f; /* a positive serial */
        BIGNUM *bn = BN_bin2bn(serial, sizeof(serial), NULL);
        ok = bn && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) != NULL;
        BN_free(bn);
    }
    ok = ok && X509_set_version(x, 2) == 1;
    /* An hour back: a jail's clock that is a little behind still accepts it. */
    ok = ok && X509_gmtime_adj(X509_getm_notBefore(x), -3600) &&
         X509_gmtime_adj(X509_getm_notAfter(x), (long)LEAF_DAYS * 86400);
    X509_NAME *name = X509_NAME_new();
    ok = ok && name &&
         X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)host, -1, -1,
                                    0) == 1 &&
         X509_set_subject_name(x, name) == 1 &&
         X509_set_issuer_name(x, X509_get_subject_name(ca->cert)) == 1 &&
         X509_set_pubkey(x, ca->leaf_key) == 1;
    X509_NAME_free(name);
    char san[300];
    snprintf(san, sizeof(san), "DNS:%s", host);
    ok = ok && x509_add_ext(x, ca->cert, NID_basic_constraints, "critical,CA:FALSE") &&
         x509_add_ext(x, ca->cert, NID_key_usage, "critical,digitalSignature") &&
         x509_add_ext(x, ca->cert, NID_ext_key_usage, "serverAuth") &&
         x509_add_ext(x, ca->cert, NID_subject_alt_name, san) &&
         x509_add_ext(x, ca->cert, NID_subject_key_identifier, "hash") &&
         x509_add_ext(x, ca->cert, NID_authority_key_identifier, "keyid:always");
    ok = ok && X509_sign(x, ca->key, EVP_sha256()) > 0;
    if (!ok) {
        X509_free(x);
        return NULL;
    }
    return x;
}

/* The cached leaf for host (a new reference), made when missing or a day old. */
static X509 *leaf_for(struct tlsca *ca, const char *host)
{
    time_t now = time(NULL);
    pthread_mutex_lock(&ca->lock);
    struct leaf *slot = NULL, *oldest = &ca->cache[0];
    for (size_t i = 0; i < CACHE_SIZE; i++) {
        struct leaf *l = &ca->cache[i];
        if (l->cert && strcasecmp(l->host, host) == 0) {
            slot = l;
            break;
        }
        if (!l->cert || (oldest->cert && l->use < oldest->use))
            oldest = l;
    }
    if (slot && now - slot->made < LEAF_REUSE_S) {
        slot->use = ++ca->clock;
        X509_up_ref(slot->cert);
        X509 *x = slot->cert;
        pthread_mutex_unlock(&ca->lock);
        return x;
    }
    /* Signing takes the lock for ~0.1 ms, once per host and day. */
    X509 *x = make_leaf(ca, host);
    if (x) {
        if (!slot)
            slot = oldest;
        X509_free(slot->cert);
        str_copy(slot->host, host, sizeof(slot->host));
        slot->cert = x;
        slot->made = now;
        slot->use = ++ca->clock;
        X509_up_ref(x);
    }
    pthread_mutex_unlock(&ca->lock);
    return x;
}

bool tlsca_use_for(struct tlsca *ca, SSL *ssl, const char *host, char *err, size_t errlen)
{
    X509 *leaf = leaf_for(ca, host);
    if (!leaf) {
        ssl_error(err, errlen, "making a certificate");
        return false;
    }
    STACK_OF(X509) *chain = sk_X509_new_null();
    X509_up_ref(ca->cert);
    sk_X509_push(chain, ca->cert);
    bool ok = SSL_use_cert_and_key(ssl, leaf, ca->leaf_key, chain, 1) == 1;
    sk_X509_pop_free(chain, X509_free);
    X509_free(leaf);
    if (!ok)
        ssl_error(err, errlen, "using the certificate");
    return ok;
}
