/* Transparent egress on the gateway (docs/netproxy.md, "Egress without the proxy
 * variables"): in the gateway namespace, nftables' tproxy hands every TCP connection
 * that arrives on a spoke's veth to the listener bound to that veth's own address on
 * the proxy port (the spoke's netproxy listener, with IP_TRANSPARENT), and every UDP
 * datagram to the one on port 53 (the spoke's resolver), whatever their destination;
 * a policy route delivers what tproxy marked locally. Everything else from a veth
 * (ICMP, other protocols, all of IPv6) is dropped.
 *
 * Why tproxy and not a local route for the synthetic range with a listener per port:
 * a spoke may connect to any port and any address, and each attempt must reach
 * netproxy to be refused with a record (a port nobody listens on would answer with a
 * bare reset, unaudited). The listener is chosen by the incoming interface's address
 * (tproxy without an address uses it), so one static rule set serves every spoke, and
 * a spoke that aims at another spoke's listener or veth lands on its own listener,
 * which refuses it. */
#ifndef HUB_NET_EGRESS_H
#define HUB_NET_EGRESS_H

#include <stddef.h>
#include <stdint.h>

/* The mark and routing table the rules use inside the gateway namespace (which holds
 * nothing else). */
#define EGRESS_MARK 0x1
#define EGRESS_TABLE 100

/* Installs the rules and the route in the calling thread's network namespace (the
 * gateway's). 0, or -1 with the reason (no nf_tables or tproxy in the kernel, say). */
int egress_install(uint16_t proxy_port, char *err, size_t errlen);

/* The rule set as nft(8) text, for the docs and the tests. */
char *egress_ruleset(uint16_t proxy_port);

#endif
