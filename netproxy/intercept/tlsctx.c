#include "tlsctx.h"

#include "tlssess.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CA_FILE_MAX (16 * 1024 * 1024)

struct tlsctx {
    char *ca_file;
    char *pem; /* the bundle, read at start */
    size_t pem_len;
    SSL_client_hello_cb_fn hello;
    int (*alpn)(SSL *, const unsigned char **, unsigned char *, const unsigned char *, unsigned,
                void *);
    SSL_CTX *server, *client;
    struct tlssess *sessions; /* the client side's, for resumption */
};

/* Where an upstream SSL keeps its session key (tlsctx_client_begin). */
static int key_index = -1;

static void key_free(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx, long argl, void *argp)
{
    (void)parent;
    (void)ad;
    (void)idx;
    (void)argl;
    (void)argp;
    free(ptr);
}

static SSL_CTX *make_client(struct tlsctx *t);
static SSL_CTX *make_server(struct tlsctx *t);

struct tlsctx *tlsctx_new(const char *ca_file, SSL_client_hello_cb_fn hello,
                          int (*alpn)(SSL *, const unsigned char **, unsigned char *,
                                      const unsigned char *, unsigned, void *),
                          char *err, size_t errlen)
{
    int fd = open(ca_file, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || st.st_size > CA_FILE_MAX) {
        snprintf(err, errlen, "--upstream-ca %s: %s", ca_file,
                 fd < 0 ? strerror(errno) : "larger than 16 MiB");
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    struct tlsctx *t = xcalloc(1, sizeof(*t));
    t->ca_file = xstrdup(ca_file);
    t->pem = xmalloc((size_t)st.st_size + 1);
    ssize_t n = read_full(fd, t->pem, (size_t)st.st_size);
    close(fd);
    if (n < 0) {
        snprintf(err, errlen, "--upstream-ca %s: %s", ca_file, strerror(errno));
        tlsctx_free(t);
        return NULL;
    }
    t->pem_len = (size_t)n;
    t->hello = hello;
    t->alpn = alpn;
    t->sessions = tlssess_new();
    if (key_index < 0)
        key_index = SSL_get_ex_new_index(0, NULL, NULL, NULL, key_free);
    /* Both now, before the sandbox: OpenSSL loads its configuration and providers on
     * first use, which opens files. */
    t->client = make_client(t);
    t->server = make_server(t);
    free(t->pem);
    t->pem = NULL;
    if (!t->client || !t->server) {
        snprintf(err, errlen, "--upstream-ca %s: %s", ca_file,
                 t->client ? "cannot make a TLS context" : "no certificate in it");
        tlsctx_free(t);
        return NULL;
    }
    return t;
}

void tlsctx_free(struct tlsctx *t)
{
    if (!t)
        return;
    SSL_CTX_free(t->server);
    SSL_CTX_free(t->client);
    tlssess_free(t->sessions);
    free(t->pem);
    free(t->ca_file);
    free(t);
}

const char *tlsctx_ca_file(const struct tlsctx *t)
{
    return t->ca_file;
}

/* A session (a TLS 1.3 ticket after the handshake, or a TLS 1.2 session) from a
 * handshake that verified the upstream: kept under the key its SSL was begun with. */
static int on_new_session(SSL *ssl, SSL_SESSION *sess)
{
    struct tlsctx *t = SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl));
    const char *key = SSL_get_ex_data(ssl, key_index);
    if (!t || !key || SSL_get_verify_result(ssl) != X509_V_OK)
        return 0; /* not kept: OpenSSL frees it */
    tlssess_put(t->sessions, key, sess);
    return 1;
}

static SSL_CTX *make_client(struct tlsctx *t)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx)
        return NULL;
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    X509_STORE *store = SSL_CTX_get_cert_store(ctx);
    BIO *b = BIO_new_mem_buf(t->pem, (int)t->pem_len);
    STACK_OF(X509_INFO) *infos = b ? PEM_X509_INFO_read_bio(b, NULL, NULL, NULL) : NULL;
    BIO_free(b);
    int added = 0;
    for (int i = 0; infos && i < sk_X509_INFO_num(infos); i++) {
        X509_INFO *xi = sk_X509_INFO_value(infos, i);
        if (xi->x509 && X509_STORE_add_cert(store, xi->x509) == 1)
            added++;
    }
    sk_X509_INFO_pop_free(infos, X509_INFO_free);
    ERR_clear_error();
    if (added == 0) {
        SSL_CTX_free(ctx);
        return NULL;
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    /* Sessions go to t->sessions (tlssess.h), never to OpenSSL's own cache: ours is
     * keyed by spoke and host. */
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
    SSL_CTX_sess_set_new_cb(ctx, on_new_session);
    SSL_CTX_set_app_data(ctx, t);
    return ctx;
}

static SSL_CTX *make_server(struct tlsctx *t)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx)
        return NULL;
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_client_hello_cb(ctx, t->hello, NULL);
    SSL_CTX_set_alpn_select_cb(ctx, t->alpn, NULL);
    /* Tickets would let a client resume a session in another tunnel without the
     * hello the callback checks: none. */
    SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
    SSL_CTX_set_num_tickets(ctx, 0);
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    return ctx;
}

SSL_CTX *tlsctx_server(struct tlsctx *t)
{
    return t->server;
}

SSL_CTX *tlsctx_client(struct tlsctx *t)
{
    return t->client;
}

bool tlsctx_client_begin(struct tlsctx *t, SSL *ssl, const char *host, unsigned port,
                         const char *spoke)
{
    char key[400];
    if (!tlssess_key(key, sizeof(key), host, port, spoke))
        return true; /* too long to key: a full handshake every time */
    char *k = xstrdup(key);
    if (!SSL_set_ex_data(ssl, key_index, k)) {
        free(k);
        return false;
    }
    SSL_SESSION *s = tlssess_take(t->sessions, key);
    if (s) {
        int ok = SSL_set_session(ssl, s);
        SSL_SESSION_free(s);
        if (ok != 1)
            return false;
    }
    return true;
}

void tlsctx_client_failed(struct tlsctx *t, SSL *ssl)
{
    const char *key = SSL_get_ex_data(ssl, key_index);
    if (key)
        tlssess_forget(t->sessions, key);
}

size_t tlsctx_sessions_held(struct tlsctx *t)
{
    return tlssess_count(t->sessions);
}
