/* One connection to a Redis server (or a sentinel), plain or TLS.
 *
 * Plain connections are hiredis' own (redisContext). Debian 12's hiredis (0.14) has no
 * TLS, so a TLS connection is OpenSSL's, with hiredis formatting the commands and
 * parsing the replies (redisFormatCommand, redisReader): the same replies, the same
 * freeReplyObject(). The peer is verified against the configured CA and its name
 * (server_name, else the host dialled); a client certificate is sent when configured
 * (Redis' tls-auth-clients).
 *
 * Each command has command_timeout_ms to be sent and answered. After a NULL reply the
 * connection is unusable (as with hiredis): the caller frees it and connects again. */
#ifndef HUB_MEMORY_REDIS_WIRE_H
#define HUB_MEMORY_REDIS_WIRE_H

#include <hiredis/hiredis.h>
#include <stdbool.h>
#include <stddef.h>

struct redis_tls_config {
    const char *ca_file;     /* PEM CA bundle the server's certificate must chain to */
    const char *cert_file;   /* client certificate chain (PEM); NULL: none */
    const char *key_file;    /* its key; NULL: in cert_file */
    const char *server_name; /* name to verify (and SNI); NULL: the host dialled */
};

struct rwire;
struct ssl_ctx_st;

/* An OpenSSL context for cfg (TLS 1.2 or later, the peer verified), or NULL and err. */
struct ssl_ctx_st *rwire_tls_context(const struct redis_tls_config *cfg, char *err, size_t errlen);
void rwire_tls_context_free(struct ssl_ctx_st *ctx);

/* unix_path, or host and port; tls NULL for plain. NULL and err ("HOST:PORT: why"). */
struct rwire *rwire_connect(const char *unix_path, const char *host, int port,
                            struct ssl_ctx_st *tls, const char *server_name,
                            long connect_timeout_ms, long command_timeout_ms, char *err,
                            size_t errlen);
redisReply *rwire_command(struct rwire *w, const char *fmt, ...);
redisReply *rwire_command_argv(struct rwire *w, int argc, const char **argv, const size_t *lens);
/* A pipeline: the command sent without reading its reply (0, or -1 and broken), and
 * the next reply read (NULL: broken). */
int rwire_send_argv(struct rwire *w, int argc, const char **argv, const size_t *lens);
redisReply *rwire_get_reply(struct rwire *w);
/* Why the last command got no reply. */
const char *rwire_errstr(const struct rwire *w);
void rwire_free(struct rwire *w);

#endif
