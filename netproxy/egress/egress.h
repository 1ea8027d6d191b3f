/* Transparent egress: connections that reach the proxy without a CONNECT request. In
 * the hub's gateway namespace nftables' tproxy hands every TCP connection a spoke makes
 * to that spoke's listener (IP_TRANSPARENT), whatever its destination; the accepted
 * socket's own address is where the client was going:
 *
 *   the listener's address          a CONNECT request (the proxy, as before);
 *   its address, port 53            DNS over TCP to the spoke's resolver;
 *   a synthetic address             the name it stands for (the spoke's resolver
 *                                   handed it out): a raw TCP grant for that name and
 *                                   port is relayed unread; otherwise the allowlist
 *                                   and ports decide, and the first bytes must be a
 *                                   TLS ClientHello whose server_name is that name
 *                                   (or an HTTP request whose Host is);
 *   any other address               a raw TCP grant or an IP literal the allowlist
 *                                   names; anything else is refused.
 *
 * A "forward" listener (one the hub made on the jail's own loopback for a grant such as
 * 127.0.0.1:6390) sends every connection to its grant. Each decision is audited with
 * the same ECS records as CONNECT; a refusal resets the connection (there is no
 * protocol in which to say why: the record says it). */
#ifndef NETPROXY_EGRESS_H
#define NETPROXY_EGRESS_H

#include "netproxy/core/core.h"

struct listener;

/* Which mode a connection accepted on l is in (sets c->orig_dst for transparent). */
enum conn_mode egress_classify(struct conn *c, const struct listener *l);
/* Decides a transparent connection, or starts reading its first bytes. */
void egress_start(struct conn *c, const struct listener *l);
/* The first bytes so far (c->buf, c->len): false once decided. */
bool egress_feed(struct conn *c);

/* The rest of netproxy/egress/'s interface (this header is the folder's): the synthetic
 * addresses a jail's names resolve to (synth.h) and the jail's resolver (dnsmsg.h,
 * dnsserver.h). */
#include "synth.h"
#include "dnsmsg.h"
#include "dnsserver.h"

#endif
