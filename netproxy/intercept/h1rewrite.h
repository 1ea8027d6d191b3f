/* The client-to-server direction of an HTTP/1.1 stream netproxy sees in clear (inside
 * a TLS it opened, or plain HTTP): each request's head is parsed whole (bounded), handed
 * to the caller, which decides and rewrites it (inject.h), then written out again; the
 * body follows as it comes (Content-Length or chunked, the framing followed, the bytes
 * unchanged and shown to the caller for scanning). Pipelined requests follow one
 * another. After a request that changes protocols (Upgrade, CONNECT) the rest of the
 * stream is opaque: passed on and shown to the caller.
 *
 * Strict where a laxer parser and the upstream's could disagree about where a request
 * ends (request smuggling would carry a request past the checks): CRLF line ends only,
 * no obsolete line folding, no whitespace before a colon, one Host, Content-Length of
 * digits only and never with Transfer-Encoding, "chunked" the only transfer coding.
 * Nothing here allocates per byte; nothing reads past what it was fed. */
#ifndef NETPROXY_H1REWRITE_H
#define NETPROXY_H1REWRITE_H

#include "inject.h"
#include "netproxy/core/core.h"

#include <stdbool.h>
#include <stddef.h>

#define H1_MAX_HEAD (64 * 1024)
#define H1_MAX_FIELDS 128

struct h1rw;

struct h1rw_ops {
    /* Bytes to send on; non-zero stops the stream (the peer failed). */
    int (*out)(void *ud, const char *buf, size_t len);
    /* A request's head: res gets the verdict and the rewritten parts (inject_request). */
    void (*head)(void *ud, const struct inject_req *rq, struct inject_result *res);
    /* Body (or opaque) bytes about to be sent on: R_ALLOWED, or why not (detail). */
    enum reason (*body)(void *ud, const char *buf, size_t len, char *detail, size_t dlen);
    /* A piece scanned on its own, outside the body's stream (a chunk's extension, which
     * would otherwise split a stand-in spread over two chunks' data): as body (NULL:
     * body itself). */
    enum reason (*piece)(void *ud, const char *buf, size_t len, char *detail, size_t dlen);
    /* The upstream connection outlives the client's (upool.h): a request's
     * `Connection: close` is not sent on (h1rw_client_close() says it was asked). */
    bool keep_upstream;
    void *ud;
};

enum h1_status {
    H1_OK,      /* everything fed was handled */
    H1_REFUSED, /* the caller refused a request: h1rw_refusal() */
    H1_ERROR,   /* not valid HTTP/1.1: h1rw_refusal() says why (R_BAD_REQUEST...) */
    H1_OUT,     /* out() failed */
};

struct h1rw *h1rw_new(const struct h1rw_ops *ops);
void h1rw_free(struct h1rw *r);
enum h1_status h1rw_feed(struct h1rw *r, const char *buf, size_t len);
/* After H1_REFUSED or H1_ERROR: the reason, a one-line detail and the status to answer
 * with (0: none, the connection is closed). The method and path of the request (for
 * the record; "" before a request line was read). */
enum reason h1rw_refusal(const struct h1rw *r, const char **detail, int *status);
const char *h1rw_method(const struct h1rw *r);
const char *h1rw_path(const struct h1rw *r);
/* Whether a request asked to close the connection after its answer. */
bool h1rw_client_close(const struct h1rw *r);
/* Whether the stream is between requests (a close there loses nothing). */
bool h1rw_idle(const struct h1rw *r);

#endif
