/* The jail's resolver: the DNS server a spoke's /etc/resolv.conf names (its veth
 * gateway address, UDP and TCP port 53). It answers from the spoke's policy, never
 * from the internet:
 *
 *   a name the spoke may reach (its registrable domain is in the allowlist, or it is a
 *   raw TCP grant's name): A -> the name's synthetic address (netproxy/egress/synth.h),
 *   handed out on first ask and the same for the spoke's life; AAAA and every other
 *   type -> NOERROR with no record (the jail has no IPv6; clients fall back to A at
 *   once instead of waiting);
 *   any other name -> NXDOMAIN, with an RFC 8914 "Prohibited" extended error and its
 *   reason when the query has EDNS, and an audit record. NXDOMAIN and not REFUSED:
 *   glibc and the other stub resolvers take REFUSED for a broken server and try again
 *   or report a temporary failure (EAI_AGAIN), so the program would retry and then
 *   blame the network; NXDOMAIN ends the lookup at once with "not found", which is
 *   what the spoke should learn. The extended error says it was policy.
 *
 * Malformed queries get FORMERR, other opcodes and classes NOTIMP; responses and runts
 * are dropped. Every spoke has a query budget (--dns-rate per second, --dns-burst at
 * once, over UDP and TCP together): past it queries are dropped, and the first drop of
 * each burst is audited. A datagram to anywhere but the resolver (QUIC to a synthetic
 * address, a hard-coded 8.8.8.8) is dropped and audited under the same budget.
 *
 * The synthetic address stands for the name, not for a check: the connection to it is
 * decided again, port and first bytes included (egress.h). A name under an allowed
 * domain that does not exist upstream still gets an address; the connection then
 * fails at netproxy's own lookup (dns-failure), which is audited. */
#ifndef NETPROXY_DNSSERVER_H
#define NETPROXY_DNSSERVER_H

#include "dnsmsg.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

struct proxy;
struct spoke;
struct conn;
struct dns_udp;

/* What DNS over TCP buffers: one query and its length prefix. */
#define DNS_TCP_BUFFER (2 + DNS_MSG_MAX)

/* Serves the spoke's resolver on the bound UDP socket fd (owned from now on, also on
 * failure), from the main thread's loop. NULL with a message. */
struct dns_udp *dns_udp_add(struct proxy *px, struct spoke *s, int fd, char *err, size_t errlen);
void dns_udp_free(struct dns_udp *d);

/* DNS over TCP on a connection in MODE_DNS: answers each complete query in c->buf.
 * false once the connection is answering or gone. */
bool dns_tcp_feed(struct conn *c);

/* The answer to one query (UDP when udp, else TCP, which has no size limit) into out,
 * for the record and for tests: 0 when the query is dropped. */
size_t dns_answer(struct proxy *px, struct spoke *s, const struct sockaddr *src, bool udp,
                  const uint8_t *query, size_t len, uint8_t *out, size_t cap);

#endif
