/* The spokes' network, hub/net/'s interface: the gateway namespace and its nftables
 * for transparent egress (net_gateway.h, net_egress.h), the pool of veth pairs and
 * addresses (net_vethpool.h), the spokes' slot numbers (slots.h), netproxy's
 * supervision (net_proxy.h), a spoke's registration with it (net_spoke.h), the secrets
 * it puts into a spoke's requests (spoke_secrets.h) and their rotation while spokes run
 * (secrets_watch.h). It knows the configuration (config/) and the store (secrets/),
 * never the hub: the runtime passes it what it needs. */
#ifndef HUB_NET_H
#define HUB_NET_H

#include "net_egress.h"
#include "net_gateway.h"
#include "net_vethpool.h"
#include "net_proxy.h"
#include "net_spoke.h"
#include "secrets_watch.h"
#include "slots.h"
#include "spoke_secrets.h"

#endif
