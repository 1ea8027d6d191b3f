/* The runtime's interface to the other folders of hub/ (the only runtime header they
 * include): the hub itself (hub.h, with the permission, sampling and elicitation
 * hooks), the scripted permission answers (answers.h), the spokes' environment and data
 * paths (spoke_env.h), a remote spoke's OAuth login (oauth.h, for `hub spokes login`),
 * and, from the layers below, what the operator wrote (config/config.h: hub.json, the
 * manifests and their schemas, the catalog, the pin) and the secret store
 * (secrets/secrets.h). The other runtime headers are its own; the spokes' network and
 * netproxy's supervision are hub/net/, below, which a folder above includes itself. */
#ifndef HUB_RUNTIME_H
#define HUB_RUNTIME_H

#include "answers.h"
#include "config/config.h"
#include "hub.h"
#include "oauth.h"
#include "secrets/secrets.h"
#include "spoke_env.h"

#endif
