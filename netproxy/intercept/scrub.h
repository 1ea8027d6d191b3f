/* Responses scrubbed of the spoke's real values (docs/secrets.md): an API that echoes a
 * request header (CORS reflection of Origin, request ids, an error page quoting a
 * header) would otherwise hand the value netproxy put in back to the spoke, which
 * could then send it anywhere in a body.
 *
 * Every occurrence of a value of the spoke's set, in the forms an API plausibly echoes,
 * is replaced by a mask of the same length before the spoke sees it:
 * - as it is;
 * - percent-encoded (upper and lower case hex), when that differs;
 * - inside base64 (Basic credentials, "user:value" at any offset; standard and URL
 *   alphabets): the characters that depend on the value's bytes alone.
 * The mask is the binding's stand-in (the hub makes it as long as the value); one of
 * another length is cut or repeated to the value's length. Same length keeps every
 * framing intact (Content-Length, chunk sizes, HTTP/2 content-length).
 *
 * Not covered, and said so in docs/secrets.md: any other transformation an API applies
 * before echoing (base64 of the value inside JSON at an offset this list misses, a
 * hash, JSON escapes of characters a value does not usually hold).
 *
 * A stream is scrubbed across reads: the tail that could begin a value is held back
 * until the next bytes show whether it does (scrub_held(), scrub_flush()).
 * A NULL scrubber passes everything as it is. */
#ifndef NETPROXY_SCRUB_H
#define NETPROXY_SCRUB_H

#include "creds.h"

#include <stdbool.h>
#include <stddef.h>

struct evbuffer;
struct scrub;

/* Told once per occurrence found (the binding, never where or what). */
typedef void (*scrub_found_fn)(void *ud, const struct cred *c);

/* A scrubber for set s (a reference is taken; NULL or an empty set: NULL). */
struct scrub *scrub_new(struct cred_set *s, scrub_found_fn found, void *ud);
void scrub_free(struct scrub *sc);
/* The set it was made for (a rotation makes a new one). */
const struct cred_set *scrub_set(const struct scrub *sc);
/* A stream's next bytes: what is safe to send is appended to out, a tail that may
 * begin a value is held. */
void scrub_feed(struct scrub *sc, const char *buf, size_t len, struct evbuffer *out);
/* The held tail, appended to out as it is (the stream ended or waited long enough:
 * it holds no whole value). */
void scrub_flush(struct scrub *sc, struct evbuffer *out);
size_t scrub_held(const struct scrub *sc);
/* A whole piece (a header field's value) scrubbed in place. */
void scrub_piece(struct scrub *sc, char *buf, size_t len);

#endif
