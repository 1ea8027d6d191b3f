/* Stable host ids: in namespace mode each (user, app) keeps one host uid for its data
 * directory, across hubs and restarts, so that a spoke started by another hub (or
 * after a restart) finds the directory owned by the id it runs as, and no hub ever
 * hands a running spoke's data to a new owner.
 *
 * The configured range [host_id_base, host_id_base + host_id_count) is split: its
 * upper half holds the stable ids, its lower half is nsjail-lite's pool for spokes
 * whose /data is a tmpfs (repl sessions), which own nothing that outlives them. The
 * registry of who has which id is DATA_ROOT/.host-ids ("ID USER/APP" lines, root's,
 * 0600, changed under an flock), beside the directories it describes. The id's lock
 * is nsjail-lite's host-wide one (jail_host_id_lock): held by the spoke's jail for as
 * long as it runs, so that a data directory is used by one spoke at a time. */
#ifndef HUB_HOSTID_H
#define HUB_HOSTID_H

#include "config.h"

#include <stdbool.h>
#include <stdint.h>

#define HOSTID_REGISTRY ".host-ids"

/* Whether the range is split (at least two ids): otherwise every spoke takes an id
 * from the whole range, as before stable ids. */
bool hostid_stable(const struct hub_config *cfg);
/* The pool's part of the range: base and count for nsjail-lite. */
void hostid_pool(const struct hub_config *cfg, uint32_t *base, uint32_t *count);

/* The stable id of key (the data directory's path below the data root, "USER/APP" or
 * "USER/APP.INSTANCE"): the one registered, or the lowest free one of the upper half,
 * registered now. 0, or -1 with err (the registry cannot be read or written, or every
 * stable id is taken). */
int hostid_lookup(const struct hub_config *cfg, const char *key, uint32_t *id, char *err,
                  size_t errlen);

#endif
