/* A tunnel of a spoke that holds stand-ins (hub mode, docs/secrets.md): the one place
 * where netproxy looks inside a connection.
 *
 * - To a host one of the spoke's secrets is for, netproxy opens the TLS: it answers the
 *   client with a certificate of the hub's CA for that host (the jail trusts that CA),
 *   first completes its own handshake with the real upstream, verified as any client
 *   would, offering the client's ALPN protocols, and gives the client the upstream's
 *   choice; then each request goes through inject.h (HTTP/1.1 here, HTTP/2 through
 *   h2proxy.h): the stand-in becomes the value, a stand-in for another host is
 *   refused. A ClientHello that names another host than the tunnel's is refused.
 * - To any other host, TLS is left alone: the first byte says so (a TLS handshake
 *   record) and the tunnel becomes the ordinary spliced relay. Nothing there is opened.
 * - Anything in clear (plain HTTP, or other bytes) is read as it passes, and a stand-in
 *   in it is refused; nothing is injected in clear.
 *
 * Transparent egress hands over the same way, with the first flight already read. */
#ifndef NETPROXY_INTERCEPT_H
#define NETPROXY_INTERCEPT_H

#include <stdbool.h>
#include <stddef.h>

struct conn;
struct intercept;

/* Whether buf (a CONNECT request's head, which goes to the proxy and no further) holds
 * one of the spoke's stand-ins: then detail says whose, for the refusal. */
bool intercept_head_refused(struct conn *c, const char *buf, size_t len, char *detail, size_t dlen);
/* Whether c (connected, decided) should go through here instead of the relay. */
bool intercept_wanted(struct conn *c);
/* Takes c over: c->ic is set, c stays in C_RELAY for the timers, drain and the close
 * record. It may end c before returning. */
void intercept_start(struct conn *c);
/* The TLS contexts with this file's callbacks (tlsctx.h); NULL and why. */
struct tlsctx *intercept_tls_new(const char *ca_file, char *err, size_t errlen);
/* conn_free's part: the TLS state, events and buffers (the sockets are c's). */
void intercept_free(struct intercept *ic);

/* The rest of netproxy/intercept/'s interface (this header is the folder's): the
 * secrets and their stand-ins (creds.h, scrub.h, inject.h), HTTP/1.1 and HTTP/2 through
 * the interception (h1answer.h, h1rewrite.h, h2proxy.h), the TLS it terminates and
 * opens (tlsca.h, tlsctx.h, tlssess.h) and the pool of upstream connections (upool.h). */
#include "creds.h"
#include "scrub.h"
#include "inject.h"
#include "h1answer.h"
#include "h1rewrite.h"
#include "h2proxy.h"
#include "tlsca.h"
#include "tlsctx.h"
#include "tlssess.h"
#include "upool.h"

#endif
