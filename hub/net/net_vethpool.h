/* The veth address pool: a /30 per spoke out of a configured IPv4 range (default
 * 169.254.64.0/18), the host side .1 and the spoke side .2 of each /30. The /30 that
 * holds 169.254.169.254 (cloud metadata) is never handed out, whatever the range. */
#ifndef HUB_NET_VETHPOOL_H
#define HUB_NET_VETHPOOL_H

#include "netaddr.h"

#include <stdbool.h>
#include <stddef.h>

struct veth_addrs {
    char host_ip[16];   /* "169.254.64.1" */
    char host_cidr[20]; /* "169.254.64.1/30" */
    char spoke_ip[16];
    char spoke_cidr[20];
};

/* Number of /30 slots the pool offers. */
size_t veth_pool_size(const struct cidr *pool);
/* Addresses of slot i (0 <= i < veth_pool_size); false when out of range. */
bool veth_pool_addrs(const struct cidr *pool, size_t slot, struct veth_addrs *out);

#endif
