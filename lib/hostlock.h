/* Host-wide pools: a resource that several processes on one host may want at once (a
 * jail's host id, a veth /30, a gateway name) is held by an exclusive flock on a lock
 * file named for it, in a directory that only root can write. The lock lives on the
 * open file description, so the kernel drops it when its holder dies: a crash never
 * leaks the resource, and no list of owners has to be kept or cleaned. */
#ifndef ISOLATE_HOSTLOCK_H
#define ISOLATE_HOSTLOCK_H

#include <stddef.h>

/* The lock directory of the hub's pools (veth /30s); nsjail-lite keeps its own. */
#define HOSTLOCK_DIR "/run/isolategpt/locks"

/* Opens (making it if missing, with its parents) a lock directory: it must be root's
 * and writable by nobody else, or another user could hold resources hostage or plant
 * links. A descriptor, or -1 with err. */
int hostlock_dir_open(const char *dir, char *err, size_t errlen);
/* Takes the lock file name under dfd: its descriptor (close it to release), -2 when
 * another process holds it, -1 with err on any other failure. Never blocks. */
int hostlock_try(int dfd, const char *dir, const char *name, char *err, size_t errlen);

#endif
