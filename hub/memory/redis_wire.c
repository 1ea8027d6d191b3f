/* A connection to Redis: hiredis' for plain, OpenSSL plus hiredis' parser for TLS
 * (see redis_wire.h). */
#include "redis_wire.h"

#include "util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* A reply larger than this is refused (the memory's replies are a history window or
 * a user's grants: far smaller). */
#define REPLY_MAX (64u << 20)

struct rwire {
    redisContext *c; /* plain */
    /* TLS */
    int fd;
    SSL *ssl;
    redisReader *reader;
    size_t fed; /* bytes fed for the reply being read */
    long command_timeout_ms;
    char errstr[256];
};

static struct timeval tv_ms(long ms)
{
    return (struct timeval){.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
}

static void tls_error(char *buf, size_t len, const char *what)
{
    unsigned long e = ERR_get_error();
    char detail[200] = "";
    if (e)
        ERR_error_string_n(e, detail, sizeof(detail));
    ERR_clear_error();
    snprintf(buf, len, "%s%s%s", what, e ? ": " : "", detail);
}

struct ssl_ctx_st *rwire_tls_context(const struct redis_tls_config *cfg, char *err, size_t errlen)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx) {
        tls_error(err, errlen, "memory.tls: cannot create a TLS context");
        return NULL;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    char what[600];
    if (SSL_CTX_load_verify_locations(ctx, cfg->ca_file, NULL) != 1) {
        snprintf(what, sizeof(what), "memory.tls.ca_file %s", cfg->ca_file);
        goto fail;
    }
    if (cfg->cert_file) {
        const char *key = cfg->key_file ? cfg->key_file : cfg->cert_file;
        if (SSL_CTX_use_certificate_chain_file(ctx, cfg->cert_file) != 1) {
            snprintf(what, sizeof(what), "memory.tls.cert_file %s", cfg->cert_file);
            goto fail;
        }
        if (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1 ||
            SSL_CTX_check_private_key(ctx) != 1) {
            snprintf(what, sizeof(what), "memory.tls.key_file %s", key);
            goto fail;
        }
    }
    return ctx;
fail:
    tls_error(err, errlen, what);
    SSL_CTX_free(ctx);
    return NULL;
}

void rwire_tls_context_free(struct ssl_ctx_st *ctx)
{
    SSL_CTX_free(ctx);
}

static long ms_left(uint64_t deadline)
{
    uint64_t now = now_mono_ns();
    return now >= deadline ? 0 : (long)((deadline - now) / 1000000u) + 1;
}

/* Waits for fd to be ready for events until deadline: true when it is. */
static bool wait_fd(int fd, short events, uint64_t deadline)
{
    for (;;) {
        long left = ms_left(deadline);
        if (left <= 0)
            return false;
        struct pollfd p = {.fd = fd, .events = events};
        int n = poll(&p, 1, left > 60000 ? 60000 : (int)left);
        if (n > 0)
            return true;
        if (n < 0 && errno != EINTR)
            return false;
    }
}

static int dial(const char *host, int port, long timeout_ms, char *err, size_t errlen)
{
    char service[8];
    snprintf(service, sizeof(service), "%d", port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *res = NULL;
    int gai = getaddrinfo(host, service, &hints, &res);
    if (gai != 0) {
        snprintf(err, errlen, "%s", gai_strerror(gai));
        return -1;
    }
    uint64_t deadline = now_mono_ns() + (uint64_t)timeout_ms * 1000000u;
    int fd = -1;
    snprintf(err, errlen, "no address");
    for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
        if (fd < 0)
            continue;
        int rc = connect(fd, ai->ai_addr, ai->ai_addrlen);
        if (rc < 0 && errno == EINPROGRESS) {
            int soerr = ETIMEDOUT;
            socklen_t sl = sizeof(soerr);
            if (wait_fd(fd, POLLOUT, deadline))
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
            rc = soerr ? -1 : 0;
            errno = soerr;
        }
        if (rc < 0) {
            snprintf(err, errlen, "%s", strerror(errno));
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    if (fd >= 0) {
        int on = 1;
        setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
    }
    return fd;
}

/* Drives an SSL call that may want to read or write, until it is done or deadline. */
static int ssl_drive(struct rwire *w, int rc, uint64_t deadline)
{
    int e = SSL_get_error(w->ssl, rc);
    if (e == SSL_ERROR_WANT_READ)
        return wait_fd(w->fd, POLLIN, deadline) ? 1 : -1;
    if (e == SSL_ERROR_WANT_WRITE)
        return wait_fd(w->fd, POLLOUT, deadline) ? 1 : -1;
    return 0;
}

static bool is_ip_literal(const char *s)
{
    unsigned char buf[sizeof(struct in6_addr)];
    return inet_pton(AF_INET, s, buf) == 1 || inet_pton(AF_INET6, s, buf) == 1;
}

static struct rwire *tls_connect(const char *host, int port, SSL_CTX *ctx, const char *name,
                                 long connect_timeout_ms, long command_timeout_ms, char *err,
                                 size_t errlen)
{
    char why[300];
    int fd = dial(host, port, connect_timeout_ms, why, sizeof(why));
    if (fd < 0) {
        snprintf(err, errlen, "%s:%d: %s", host, port, why);
        return NULL;
    }
    struct rwire *w = xcalloc(1, sizeof(*w));
    w->fd = fd;
    w->command_timeout_ms = command_timeout_ms;
    w->ssl = SSL_new(ctx);
    w->reader = redisReaderCreate();
    const char *verify = name ? name : host;
    bool ok = w->ssl && w->reader && SSL_set_fd(w->ssl, fd) == 1;
    if (ok && !is_ip_literal(verify))
        ok = SSL_set_tlsext_host_name(w->ssl, verify) == 1 && SSL_set1_host(w->ssl, verify) == 1;
    else if (ok)
        ok = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(w->ssl), verify) == 1;
    if (!ok) {
        tls_error(why, sizeof(why), "cannot set up TLS");
        goto fail;
    }
    uint64_t deadline = now_mono_ns() + (uint64_t)connect_timeout_ms * 1000000u;
    for (;;) {
        int rc = SSL_connect(w->ssl);
        if (rc == 1)
            break;
        int more = ssl_drive(w, rc, deadline);
        if (more > 0)
            continue;
        long v = SSL_get_verify_result(w->ssl);
        if (more < 0)
            snprintf(why, sizeof(why), "TLS handshake timed out");
        else if (v != X509_V_OK)
            snprintf(why, sizeof(why),
                     "TLS: the server's certificate is refused: %s (expected "
                     "a certificate for %s from memory.tls.ca_file)",
                     X509_verify_cert_error_string(v), verify);
        else
            tls_error(why, sizeof(why), "TLS handshake failed");
        goto fail;
    }
    return w;
fail:
    snprintf(err, errlen, "%s:%d: %s", host, port, why);
    rwire_free(w);
    return NULL;
}

struct rwire *rwire_connect(const char *unix_path, const char *host, int port,
                            struct ssl_ctx_st *tls, const char *server_name,
                            long connect_timeout_ms, long command_timeout_ms, char *err,
                            size_t errlen)
{
    if (tls && !unix_path)
        return tls_connect(host, port, tls, server_name, connect_timeout_ms, command_timeout_ms,
                           err, errlen);
    struct timeval tv = tv_ms(connect_timeout_ms);
    redisContext *c = unix_path ? redisConnectUnixWithTimeout(unix_path, tv)
                                : redisConnectWithTimeout(host, port, tv);
    if (!c || c->err) {
        if (unix_path)
            snprintf(err, errlen, "unix:%s: %s", unix_path, c ? c->errstr : "out of memory");
        else
            snprintf(err, errlen, "%s:%d: %s", host, port, c ? c->errstr : "out of memory");
        redisFree(c);
        return NULL;
    }
    redisSetTimeout(c, tv_ms(command_timeout_ms));
    if (!unix_path)
        redisEnableKeepAlive(c);
    struct rwire *w = xcalloc(1, sizeof(*w));
    w->c = c;
    w->fd = -1;
    return w;
}

static void fail(struct rwire *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(struct rwire *w, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->errstr, sizeof(w->errstr), fmt, ap);
    va_end(ap);
}

/* Sends a formatted command over TLS: 0, or -1 and the connection broken. */
static int tls_send(struct rwire *w, const char *cmd, size_t len)
{
    if (w->errstr[0])
        return -1; /* broken before: the caller reconnects */
    uint64_t deadline = now_mono_ns() + (uint64_t)w->command_timeout_ms * 1000000u;
    size_t off = 0;
    while (off < len) {
        size_t chunk = len - off > 1u << 30 ? 1u << 30 : len - off;
        int rc = SSL_write(w->ssl, cmd + off, (int)chunk);
        if (rc > 0) {
            off += (size_t)rc;
            continue;
        }
        int more = ssl_drive(w, rc, deadline);
        if (more < 0)
            fail(w, "timed out sending");
        if (more <= 0) {
            if (more == 0) /* with OpenSSL's reason: a TLS alert, such as a missing
                              client certificate, says more than "lost" */
                tls_error(w->errstr, sizeof(w->errstr), "TLS connection lost");
            return -1;
        }
    }
    return 0;
}

/* The next reply over TLS (the parser may hold it already, after a pipeline). */
static redisReply *tls_read(struct rwire *w)
{
    if (w->errstr[0])
        return NULL;
    uint64_t deadline = now_mono_ns() + (uint64_t)w->command_timeout_ms * 1000000u;
    w->fed = 0;
    for (;;) {
        void *reply = NULL;
        if (redisReaderGetReply(w->reader, &reply) != REDIS_OK) {
            fail(w, "protocol error: %s", w->reader->errstr);
            return NULL;
        }
        if (reply)
            return reply;
        char buf[16384];
        int rc = SSL_read(w->ssl, buf, sizeof(buf));
        if (rc > 0) {
            w->fed += (size_t)rc;
            if (w->fed > REPLY_MAX) {
                fail(w, "reply larger than %u bytes", REPLY_MAX);
                return NULL;
            }
            if (redisReaderFeed(w->reader, buf, (size_t)rc) != REDIS_OK) {
                fail(w, "protocol error");
                return NULL;
            }
            continue;
        }
        int more = ssl_drive(w, rc, deadline);
        if (more < 0)
            fail(w, "Resource temporarily unavailable (timed out)");
        if (more <= 0) {
            if (more == 0)
                tls_error(w->errstr, sizeof(w->errstr), "Server closed the TLS connection");
            return NULL;
        }
    }
}

static redisReply *tls_roundtrip(struct rwire *w, const char *cmd, size_t len)
{
    return tls_send(w, cmd, len) < 0 ? NULL : tls_read(w);
}

int rwire_send_argv(struct rwire *w, int argc, const char **argv, const size_t *lens)
{
    if (w->c) {
        if (redisAppendCommandArgv(w->c, argc, argv, lens) != REDIS_OK)
            return -1;
        int done = 0;
        while (!done)
            if (redisBufferWrite(w->c, &done) != REDIS_OK)
                return -1;
        return 0;
    }
    char *cmd = NULL;
    int len = redisFormatCommandArgv(&cmd, argc, argv, lens);
    int rc = len > 0 ? tls_send(w, cmd, (size_t)len) : -1;
    if (len <= 0)
        fail(w, "cannot format the command");
    redisFreeCommand(cmd);
    return rc;
}

redisReply *rwire_get_reply(struct rwire *w)
{
    if (w->c) {
        void *rep = NULL;
        return redisGetReply(w->c, &rep) == REDIS_OK ? rep : NULL;
    }
    return tls_read(w);
}

redisReply *rwire_command(struct rwire *w, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *rep;
    if (w->c) {
        rep = redisvCommand(w->c, fmt, ap);
    } else {
        char *cmd = NULL;
        int len = redisvFormatCommand(&cmd, fmt, ap);
        rep = len > 0 ? tls_roundtrip(w, cmd, (size_t)len) : NULL;
        if (len <= 0)
            fail(w, "cannot format the command");
        redisFreeCommand(cmd);
    }
    va_end(ap);
    return rep;
}

redisReply *rwire_command_argv(struct rwire *w, int argc, const char **argv, const size_t *lens)
{
    if (w->c)
        return redisCommandArgv(w->c, argc, argv, lens);
    char *cmd = NULL;
    int len = redisFormatCommandArgv(&cmd, argc, argv, lens);
    redisReply *rep = len > 0 ? tls_roundtrip(w, cmd, (size_t)len) : NULL;
    if (len <= 0)
        fail(w, "cannot format the command");
    redisFreeCommand(cmd);
    return rep;
}

const char *rwire_errstr(const struct rwire *w)
{
    return w->c ? w->c->errstr : w->errstr;
}

void rwire_free(struct rwire *w)
{
    if (!w)
        return;
    if (w->c)
        redisFree(w->c);
    if (w->ssl) {
        if (!w->errstr[0])
            SSL_shutdown(w->ssl); /* best effort: the socket is non-blocking */
        SSL_free(w->ssl);
    }
    if (w->reader)
        redisReaderFree(w->reader);
    if (w->fd >= 0)
        close(w->fd);
    free(w);
}
