/* HTTP/2 inside a tunnel whose TLS netproxy opened (intercept.h), when the upstream and
 * the client both chose h2: nghttp2 as the server towards the client and as the client
 * towards the upstream, one upstream stream per client stream. Each request's header
 * block goes through the same decision and rewriting as HTTP/1.1 (inject.h, the
 * :authority and :path pseudo-headers as Host and the target); DATA is scanned for
 * stand-ins and relayed with flow control end to end (a window is given back to the
 * sender only once the bytes are passed on), so a slow side holds the other back. */
#ifndef NETPROXY_H2PROXY_H
#define NETPROXY_H2PROXY_H

#include "inject.h"
#include "scrub.h"

#include <stdbool.h>
#include <stddef.h>

struct h2proxy;

#define H2PROXY_MAX_BACKLOG (256 * 1024)

struct h2proxy_ops {
    void (*head)(void *ud, const struct inject_req *rq, struct inject_result *res);
    enum reason (*body)(void *ud, const char *buf, size_t len, char *detail, size_t dlen);
    /* Bytes for the client (to_client) or the upstream; false: the tunnel ended. */
    bool (*out)(void *ud, bool to_client, const char *buf, size_t len);
    /* Bytes queued for that side and not yet written (NULL: never held back). Past
     * H2PROXY_MAX_BACKLOG nothing more is taken from the session for it until
     * h2proxy_flush() after the side drained. */
    size_t (*backlog)(void *ud, bool to_client);
    /* A scrubber for one answer (its header values and DATA; NULL: none). */
    struct scrub *(*scrub_new)(void *ud);
    void *ud;
};

struct h2proxy *h2proxy_new(const struct h2proxy_ops *ops);
void h2proxy_free(struct h2proxy *h);
/* Sends both sessions' prefaces (our SETTINGS). 0 or -1. */
int h2proxy_start(struct h2proxy *h);
/* Bytes from the client (from_client) or the upstream. 0, or -1: a protocol error
 * ended the connection (GOAWAY sent) or out() failed. */
int h2proxy_feed(struct h2proxy *h, bool from_client, const char *buf, size_t len);
/* Sends what the sessions held back while a side's backlog was full. 0 or -1. */
int h2proxy_flush(struct h2proxy *h);
/* One side's stream ended. */
void h2proxy_eof(struct h2proxy *h, bool from_client);
/* Whether both sessions are done (nothing more to send or receive). */
bool h2proxy_done(const struct h2proxy *h);

#endif
