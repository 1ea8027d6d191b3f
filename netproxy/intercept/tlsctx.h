/* The two TLS contexts of a tunnel netproxy opens (intercept.h): towards the client, a
 * server that presents the hub CA's certificate for the host and asks the caller (the
 * client_hello callback) before it answers, so that the upstream's handshake comes
 * first and its ALPN choice is the client's; towards the upstream, a client that
 * verifies the server as any client would (its chain against the trust store, its name
 * against the host, TLS 1.2 or later).
 *
 * The trust store is the system's bundle (or --upstream-ca), read and parsed at start,
 * before the sandbox forbids opening files. */
#ifndef NETPROXY_TLSCTX_H
#define NETPROXY_TLSCTX_H

#include <openssl/ssl.h>
#include <stdbool.h>
#include <stddef.h>

#define TLSCTX_DEFAULT_CA_FILE "/etc/ssl/certs/ca-certificates.crt"

struct tlsctx;

/* Reads ca_file (the PEM bundle upstreams are verified with) and makes both contexts;
 * NULL and why. */
struct tlsctx *tlsctx_new(const char *ca_file, SSL_client_hello_cb_fn hello,
                          int (*alpn)(SSL *, const unsigned char **, unsigned char *,
                                      const unsigned char *, unsigned, void *),
                          char *err, size_t errlen);
void tlsctx_free(struct tlsctx *t);
/* The contexts (shared by the workers: OpenSSL's are thread-safe once made). */
SSL_CTX *tlsctx_server(struct tlsctx *t);
SSL_CTX *tlsctx_client(struct tlsctx *t);
const char *tlsctx_ca_file(const struct tlsctx *t);
/* Before an upstream SSL's handshake: names the session key (host, port, spoke) its
 * sessions are kept under, and sets a kept one to resume (tlssess.h). false: out of
 * memory. */
bool tlsctx_client_begin(struct tlsctx *t, SSL *ssl, const char *host, unsigned port,
                         const char *spoke);
/* After an upstream's handshake failed: its key's sessions are dropped. */
void tlsctx_client_failed(struct tlsctx *t, SSL *ssl);
size_t tlsctx_sessions_held(struct tlsctx *t);

#endif
