/* A spoke's network, as netproxy sees it: its registration (the listener the gateway's
 * tproxy sends every connection to, its resolver's socket, its allowlist, ports and raw
 * TCP grants) and the listeners on its own loopback that carry a grant such as
 * 127.0.0.1:6390 out of the jail (made by nsjail-lite's monitor, handed over here). */
#ifndef HUB_NET_SPOKE_H
#define HUB_NET_SPOKE_H

#include <stddef.h>

#include <stdint.h>

struct gateway;
struct manifest;
struct proxy_sup;
struct spoke_secrets;

/* A spoke as netproxy knows it. */
struct net_spoke {
    const char *key;            /* its entry in netproxy (the spoke's proxy key) */
    const char *user;           /* the user it runs for, for the audit records */
    const char *host_ip;        /* its address on the gateway */
    const struct manifest *m;   /* its grants: allow, ports, tcp */
    uint16_t proxy_port;        /* netproxy's port on the gateway (hub.json) */
};

/* Registers s with netproxy, listen_fd its listener on the gateway; with transparent
 * egress (gw) also a resolver socket on host_ip:53. 0, or -1 and why. sec: the secrets
 * netproxy is to put into its requests (may be NULL). */
int net_spoke_register(struct proxy_sup *proxy, struct gateway *gw, const struct net_spoke *s,
                       int listen_fd, const struct spoke_secrets *sec, char *err, size_t errlen);
/* The manifest's tcp grants to a loopback address (NULL-terminated, malloc'd; NULL
 * when none): the jail listens on each for the grant. */
char **net_spoke_loopback_grants(const struct manifest *m);
/* The jail's loopback listeners, as its monitor sent them to sink: each goes to netproxy
 * as a forward for the spoke named name, whose entry is key (NULL or "": none, and
 * they are closed; proxy NULL likewise). Closes sink. */
void net_spoke_forwards(struct proxy_sup *proxy, const char *key, const char *name, int sink);

#endif
