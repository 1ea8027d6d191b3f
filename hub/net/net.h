/* The spokes' network, hub/net/'s interface: the gateway namespace and its nftables
 * for transparent egress (net_gateway.h, net_egress.h), the pool of veth pairs and
 * addresses (net_vethpool.h) and the spokes' slot numbers (slots.h). The pieces that
 * need the hub itself (netproxy's supervision, wiring a spoke in) stay in hub/runtime/
 * as net_proxy.c and net_spoke.c. */
#ifndef HUB_NET_H
#define HUB_NET_H

#include "net_egress.h"
#include "net_gateway.h"
#include "net_vethpool.h"
#include "slots.h"

#endif
