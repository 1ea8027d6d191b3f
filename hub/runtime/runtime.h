/* The runtime's interface to the other folders of hub/ (the only runtime header they
 * include): the hub itself (hub.h, which brings the configuration, manifests and their
 * schemas, and the permission, sampling and elicitation hooks), the scripted permission
 * answers (answers.h), the catalog (catalog.h), the spokes' environment and data paths
 * (spoke_env.h), the pin of a spoke's tools (pin.h, for `hub spokes add|update|verify`),
 * a remote spoke's OAuth login (oauth.h, for `hub spokes login`), and, from the layer
 * below, the secret store and what `hub secrets` checks a value with
 * (secrets/secrets.h; config.h opens the store the configuration names). The other
 * runtime headers are its own; the spokes' network is hub/net/ below, with netproxy's
 * supervision and a spoke's wiring into it here (net_proxy.c, net_spoke.c). */
#ifndef HUB_RUNTIME_H
#define HUB_RUNTIME_H

#include "answers.h"
#include "config/config.h"
#include "hub.h"
#include "oauth.h"
#include "secrets/secrets.h"
#include "spoke_env.h"

#endif
