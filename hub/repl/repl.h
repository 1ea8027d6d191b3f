/* The repl-server's interface to the other folders of hub/ (`hub repl-server` in cli/):
 * the server (replserver.h) and its wire format (replframe.h). replserver_impl.h is its
 * own. */
#ifndef HUB_REPL_H
#define HUB_REPL_H

#include "replframe.h"
#include "replserver.h"

#endif
