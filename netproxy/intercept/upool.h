/* Idle upstream connections of the injecting path (intercept.h), kept for the next
 * tunnel of the same spoke to the same host and port: the tunnel then skips the TLS
 * handshake with the upstream (the largest share of its cost, docs/secrets.md).
 *
 * Rules: only an HTTP/1.1 connection whose every answer was read whole, nothing
 * pending either way, no close announced (intercept.c decides); keyed by the spoke
 * itself (a reference held: never another spoke, nor a spoke re-added under the same
 * name) with the host and port; at most UPOOL_PER_KEY per key and UPOOL_MAX per worker
 * (the oldest goes); dropped after UPOOL_IDLE_MS idle, or as soon as the upstream
 * closes it or sends anything unasked. Per worker thread: a connection stays on the
 * event loop it was made on. */
#ifndef NETPROXY_UPOOL_H
#define NETPROXY_UPOOL_H

#include <openssl/ssl.h>
#include <stdbool.h>
#include <stdint.h>

#define UPOOL_PER_KEY 4
#define UPOOL_MAX 64
#define UPOOL_IDLE_MS 2000

struct event_base;
struct spoke;

/* Keeps fd and ssl (both taken over) for spoke, host, port. */
void upool_put(struct event_base *base, struct spoke *spoke, const char *host, uint16_t port,
               int fd, SSL *ssl);
/* A kept connection for spoke, host, port (the caller owns fd and ssl), or false. */
bool upool_take(struct spoke *spoke, const char *host, uint16_t port, int *fd, SSL **ssl);
/* How many this thread keeps (tests, metrics). */
unsigned upool_count(void);

#endif
