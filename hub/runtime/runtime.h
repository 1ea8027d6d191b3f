/* The runtime's interface to the other folders of hub/ (the only runtime header they
 * include): the hub itself (hub.h, which brings the configuration, manifests and
 * schema, and the permission, sampling and elicitation hooks), the scripted permission
 * answers (answers.h), the options every sub-command shares (cli_common.h), the
 * spokes' environment and data paths (spoke_env.h) and the pin of a spoke's tools
 * (pin.h, for `hub spokes add|update|verify`), and bearer token files (tokens.h). The
 * other runtime headers are its own. */
#ifndef HUB_RUNTIME_H
#define HUB_RUNTIME_H

#include "answers.h"
#include "cli_common.h"
#include "hub.h"
#include "pin.h"
#include "spoke_env.h"
#include "tokens.h"

#endif
