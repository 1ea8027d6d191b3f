/* A spoke's synthetic addresses: the jail's resolver answers every name the spoke may
 * reach with an address of the synthetic range (240.240.0.0/16 by default, in the
 * reserved 240/4 that nothing routes, as Istio's DNS proxy does), one per name, the
 * same one for the spoke's whole life. A connection to such an address is then taken
 * by the name it stands for. The map belongs to one spoke (the same address means
 * different names in different spokes: their veths tell them apart), is bounded
 * (SYNTH_MAX_NAMES by default) and is shared by the workers under its own lock.
 *
 * Addresses are handed out in order from the start of the range, skipping those whose
 * last byte is 0 or 255 (some clients take them for a network or broadcast address). */
#ifndef NETPROXY_SYNTH_H
#define NETPROXY_SYNTH_H

#include "netaddr.h"

#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SYNTH_MAX_NAMES 4096
#define SYNTH_DEFAULT_RANGE "240.240.0.0/16"

struct synth_map;

/* range: an IPv4 CIDR of at least 256 addresses; max: names (at most what the range
 * holds). NULL with a message when the range is unusable. */
struct synth_map *synth_new(const struct cidr *range, unsigned max, char *err, size_t errlen);
void synth_free(struct synth_map *m);

/* The address of name (canonical), handing out the next one when the name is new
 * (*fresh true then). -1 when the map is full. */
int synth_assign(struct synth_map *m, const char *name, struct in_addr *out, bool *fresh);
/* Puts name at addr (a map rebuilt after a restart). -1 when addr is outside the
 * range or taken by another name, or the map is full. */
int synth_preset(struct synth_map *m, const char *name, struct in_addr addr);
/* The name at addr into buf: true when the spoke's resolver handed it out. */
bool synth_lookup(struct synth_map *m, struct in_addr addr, char *buf, size_t len);
bool synth_in_range(const struct synth_map *m, struct in_addr addr);
unsigned synth_count(struct synth_map *m);

#endif
