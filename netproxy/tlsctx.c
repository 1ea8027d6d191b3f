#include "tlsctx.h"

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
};

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
    free(t->pem);
    free(t->ca_file);
    free(t);
}

const char *tlsctx_ca_file(const struct tlsctx *t)
{
    return t->ca_file;
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
    /* No session cache across tunnels: each is its own client. */
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
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
