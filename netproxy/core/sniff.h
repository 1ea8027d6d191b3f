/* The first bytes a client sends on a transparent connection to a name: a TLS
 * ClientHello, whose server_name (SNI) must be the name the connection's synthetic
 * address stands for, or a plain HTTP/1.x request, whose Host must be. Anything else is
 * refused on a name-based grant (raw TCP is what --tcp grants are for).
 *
 * Incremental like the CONNECT parser: fed every byte received so far, it resumes
 * where it stopped and costs O(n) over a trickle. A ClientHello may span several TLS
 * records (post-quantum key shares make them large); the handshake message is
 * reassembled up to SNIFF_HELLO_MAX bytes. Lengths are checked at every level (record,
 * handshake, each vector, each extension); a duplicated extension, a second host name
 * in server_name or a second Host field is an error, not a choice. */
#ifndef NETPROXY_SNIFF_H
#define NETPROXY_SNIFF_H

#include "connect.h"
#include "reason.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SNIFF_HELLO_MAX 16384 /* the ClientHello message, header included */
/* What may be buffered before a decision: the hello, its record headers, or an HTTP
 * request head within the CONNECT parser's limits (whichever the caller allows). */
#define SNIFF_TLS_BUFFER (SNIFF_HELLO_MAX + 5 * 64)

enum sniff_status { SNIFF_MORE, SNIFF_DONE, SNIFF_ERROR };
enum sniff_proto { SNIFF_UNKNOWN, SNIFF_TLS, SNIFF_HTTP };

struct sniff {
    enum sniff_proto proto;
    /* TLS: complete records consumed, and the handshake bytes reassembled from them. */
    size_t rec_off;
    uint8_t *hello; /* malloc'd on the first record; freed by sniff_free */
    size_t hello_len;
    struct req_parser rp; /* HTTP */
    /* On SNIFF_DONE: the server name or the Host's host part, raw (not canonical),
     * NUL-terminated; have_name false for a ClientHello without server_name. */
    bool have_name;
    char name[256];
    /* HTTP: the host of an absolute-form target ("GET http://host/ HTTP/1.1"), raw. */
    bool have_target_name;
    char target_name[256];
    /* On SNIFF_ERROR: the refusal and a fixed explanation. */
    enum reason error;
    const char *why;
};

void sniff_init(struct sniff *s, const struct req_limits *http_limits);
void sniff_free(struct sniff *s);
enum sniff_status sniff_feed(struct sniff *s, const uint8_t *buf, size_t len);

/* The server_name of a complete ClientHello message (handshake header included): 1 and
 * name set, 0 when it has none, -1 with *why when it is malformed. Exposed for the unit
 * tests and the fuzzer. */
int sniff_client_hello(const uint8_t *msg, size_t len, char *name, size_t namelen,
                       const char **why);

#endif
