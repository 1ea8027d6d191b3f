/* isolate.first_seen on netproxy's records: the first time a user's app reached a
 * registrable domain. netproxy has no Redis and runs unprivileged, so it keeps its own
 * store: a file of "USER<TAB>APP<TAB>DOMAIN" lines (--first-seen FILE; the hub gives
 * netproxy-first-seen in its state directory), opened and read before privileges are
 * dropped, appended to on each new triple. At most FIRSTSEEN_MAX triples: past that
 * (said once) records carry no first_seen, never a wrong one. Thread-safe. */
#ifndef NETPROXY_FIRSTSEEN_H
#define NETPROXY_FIRSTSEEN_H

#include <stddef.h>

#define FIRSTSEEN_MAX 65536
#define FIRSTSEEN_FIELD_MAX 253

/* 0, or -1 with err filled (the file cannot be opened or read). */
int np_firstseen_open(const char *path, char *err, size_t errlen);
/* 1 the triple is new (now remembered), 0 seen before, -1 unknown (no store open, a
 * field that cannot be stored, the store full or its file not written). */
int np_firstseen_mark(const char *user, const char *app, const char *domain);
void np_firstseen_close(void);

#endif
