/* A held node (a manifest's "warm": true): the spoke's next instance made ahead, its
 * jail set up and node booted, waiting before any of the server's code loads; the
 * next call takes it with a newline on stdin (the go), then speaks MCP to it as to any
 * spoke. One per (user, app), made when an instance of it that had started ended (idle,
 * or exited) and when a session of the user opens (hub serve) while it is stopped: a
 * held node that ends is not replaced, and nothing of one instance reaches the next
 * (its own jail, as any start).
 * Namespace mode only: the loader is bound into the jail. */
#ifndef HUB_HELD_H
#define HUB_HELD_H

#include <stdbool.h>
#include <stddef.h>

struct hub;
struct manifest;

/* Where the loader is in the jail. */
#define HELD_NODE_JAIL_PATH "/etc/isolategpt/held-node.cjs"

/* True when m's spokes may be held: warm, namespace mode, the hub not quitting. */
bool held_allowed(const struct hub *h, const struct manifest *m);
/* True when a spoke of m that ended for reason gets a held node next. */
bool held_wanted(const struct hub *h, const struct manifest *m, const char *reason);
/* The loader's host path (written into run_dir on first need, 0644: bound read-only),
 * or NULL with err. */
const char *held_loader_path(struct hub *h, char *err, size_t errlen);

#endif
