/* The catalog: vetted MCP servers, one JSON file per entry, that `hub spokes add NAME`
 * installs with no command (hub/cli/cli_catalog.c) and `hub catalog` lists and
 * searches. An entry names its source pinned (npm package, version, the registry's
 * integrity), what the server needs (hosts, raw TCP grants, host programs, limits, its
 * keys with the hosts and header netproxy puts them in), the variables an operator may
 * set (${NAME} in args, env and tcp) and the tools it offers, whole, as the server
 * listed them when the entry was vetted: an add whose server lists anything else is
 * refused.
 *
 * Entries come from <the directory of hub.json>/catalog/ (config/catalog in the tree,
 * /etc/isolategpt/catalog installed): the shipped ones and the operator's own, in the
 * same format. docs/mcp-servers.md#the-catalog describes each key. */
#ifndef HUB_CATALOG_H
#define HUB_CATALOG_H

#include "config.h"

#include <jansson.h>
#include <stddef.h>

#define CATALOG_MAX_ENTRIES 1024
#define CATALOG_MAX_ENTRY_BYTES (4 * 1024 * 1024)

struct catalog_entry {
    char *path;
    json_t *root; /* validated */
    const char *name, *title, *description;
};

struct catalog {
    char *dir;
    struct catalog_entry *v;
    size_t n;
    char **bad; /* "FILE: why" of each entry refused at load */
    size_t n_bad;
};

/* <dir of cfg's hub.json>/catalog (malloc'd). */
char *catalog_dir(const struct hub_config *cfg);

/* Every *.json of dir, sorted by name; an entry that does not load is left out and
 * named in bad. 0, or -1 with err when dir cannot be read (a missing dir is empty). */
int catalog_load(const char *dir, struct catalog *out, char *err, size_t errlen);
void catalog_free(struct catalog *c);
const struct catalog_entry *catalog_find(const struct catalog *c, const char *name);

/* Loads and checks one entry file: NULL with err ("FILE: key: why"). */
json_t *catalog_entry_load(const char *path, char *err, size_t errlen);

#endif
