/* The server-to-client direction of an HTTP/1.1 stream netproxy sees in clear, framed
 * so that a value split by the framing is still found (scrub.h): each answer's head is
 * scrubbed whole; a Content-Length body is scrubbed as one stream, its held tail let go
 * when the body ends; a chunked body is de-chunked, scrubbed as one stream and chunked
 * again (chunking is hop-by-hop; extensions are dropped, trailers scrubbed line by
 * line). Answers to HEAD, 1xx, 204 and 304 have no body.
 *
 * What cannot be framed (a body read until the connection ends, after 101 or a CONNECT,
 * a head that does not parse, more pipelined requests than it keeps) is scrubbed as a
 * plain stream from there on: a value whole in it is still replaced, and the caller
 * lets a held tail go after a moment (h1ans_raw()). */
#ifndef NETPROXY_H1ANSWER_H
#define NETPROXY_H1ANSWER_H

#include "scrub.h"

#include <stdbool.h>
#include <stddef.h>

struct evbuffer;
struct h1ans;

struct h1ans *h1ans_new(void);
void h1ans_free(struct h1ans *a);
/* A request went out: its method says whether its answer has a body. */
void h1ans_request(struct h1ans *a, const char *method, size_t len);
/* Bytes from the server; what the client gets is appended to out (sc NULL: nothing to
 * scrub for, the framing still followed). */
void h1ans_feed(struct h1ans *a, struct scrub *sc, const char *buf, size_t len,
                struct evbuffer *out);
/* Whether the stream is scrubbed unframed (a held tail only time lets go). */
bool h1ans_raw(const struct h1ans *a);
/* Whether every answer asked for has come whole, none said the connection closes
 * (HTTP/1.0, Connection: close) and nothing is unframed: the connection may carry
 * another tunnel's requests (upool.h). */
bool h1ans_idle(const struct h1ans *a);
/* Whether a scrubber may be changed now (no body is half-way through one). */
bool h1ans_between(const struct h1ans *a);

#endif
