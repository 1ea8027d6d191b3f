/* The gateway network namespace: a private namespace that holds only the host ends of
 * the spokes' veths and netproxy's listening sockets. A spoke can reach its proxy
 * listener and nothing else on the host: not the host's loopback services, not its
 * other interfaces. netproxy itself stays in the host namespace to dial out; a socket
 * keeps the namespace it was created in, so the listeners made here work for it.
 *
 * Anonymous by default (gone when the hub and netproxy close it, even after a crash);
 * with a name it is also published as /run/netns/NAME for `ip netns exec` and removed
 * again by gateway_free(). A name that a hub killed before gateway_free() left behind is
 * recognised at the next start (no hub holds the namespace's lock, nothing but
 * loopback in it) and removed. The name is taken from a host-wide pool: when a running
 * hub holds NAME (several hubs of one configuration), this one takes NAME-2, NAME-3,
 * ... (up to NAME-64), and says so. In it ARP answers only for the address of the receiving
 * interface and forwarding stays off, so a spoke cannot use another spoke's proxy
 * listener or reach another spoke's veth. */
#ifndef HUB_NET_GATEWAY_H
#define HUB_NET_GATEWAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gateway;

struct gateway *gateway_new(const char *name, char *err, size_t errlen);
void gateway_free(struct gateway *gw);
int gateway_netns_fd(const struct gateway *gw);
/* The published name this hub holds (NAME or NAME-N), or NULL when anonymous. */
const char *gateway_name(const struct gateway *gw);
/* Turns transparent egress on (net_egress.h: nftables tproxy rules and a policy route
 * in the gateway). Sockets made afterwards get IP_TRANSPARENT. 0, or -1 and why. */
int gateway_enable_egress(struct gateway *gw, uint16_t proxy_port, char *err, size_t errlen);
bool gateway_egress(const struct gateway *gw);
/* A listening TCP socket (non-blocking, close-on-exec) on ip:port inside the gateway
 * namespace, bound with IP_FREEBIND so that it can exist before the veth address does
 * (and IP_TRANSPARENT with egress on). -1 with errno and err on failure. */
int gateway_listen(struct gateway *gw, const char *ip, uint16_t port, char *err, size_t errlen);
/* The same for the spoke's resolver: a UDP socket on ip:53. */
int gateway_dns_socket(struct gateway *gw, const char *ip, char *err, size_t errlen);

#endif
