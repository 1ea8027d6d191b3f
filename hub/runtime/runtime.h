/* The runtime's interface to the other folders of hub/ (the only runtime header they
 * include): the hub itself (hub.h, which brings the configuration, manifests and their
 * schemas, and the permission, sampling and elicitation hooks), the scripted permission
 * answers (answers.h), the spokes' environment and data paths (spoke_env.h) and the pin
 * of a spoke's tools (pin.h, for `hub spokes add|update|verify`), the secret store and
 * what `hub secrets` checks a value with (secrets.h, standin.h, keylike.h). The other runtime
 * headers are its own; the network pieces (netproxy's supervision, the gateway
 * namespace, the veth pool) are its net_*.c. */
#ifndef HUB_RUNTIME_H
#define HUB_RUNTIME_H

#include "answers.h"
#include "catalog.h"
#include "hub.h"
#include "keylike.h"
#include "oauth.h"
#include "pin.h"
#include "secrets.h"
#include "spoke_env.h"
#include "standin.h"

#endif
