/* A spoke's network, as netproxy sees it: its registration (the listener the gateway's
 * tproxy sends every connection to, its resolver's socket, its allowlist, ports and raw
 * TCP grants) and the listeners on its own loopback that carry a grant such as
 * 127.0.0.1:6390 out of the jail (made by nsjail-lite's monitor, handed over here). */
#ifndef HUB_NET_SPOKE_H
#define HUB_NET_SPOKE_H

#include <stddef.h>

struct hub;
struct spoke;
struct manifest;
struct spoke_secrets;

/* Registers sp (sp->proxy_key, sp->host_ip set) with netproxy, listen_fd its listener
 * on the gateway; with transparent egress also a resolver socket on host_ip:53. 0, or
 * -1 and why. sec: the secrets netproxy is to put into its requests (may be NULL). */
int net_spoke_register(struct hub *h, struct spoke *sp, int listen_fd,
                       const struct spoke_secrets *sec, char *err, size_t errlen);
/* The manifest's tcp grants to a loopback address (NULL-terminated, malloc'd; NULL
 * when none): the jail listens on each for the grant. */
char **net_spoke_loopback_grants(const struct manifest *m);
/* The jail's loopback listeners, as its monitor sent them to sink: each goes to netproxy
 * as a forward for sp. Closes sink. */
void net_spoke_forwards(struct hub *h, struct spoke *sp, int sink);

#endif
