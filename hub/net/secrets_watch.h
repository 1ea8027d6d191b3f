/* Rotation without restarting spokes: the hub watches the secret store (inotify), and
 * when `hub secrets set` replaces a secret that netproxy injects for running spokes,
 * the new value goes to netproxy at once and counts from the spoke's next request; the
 * spoke keeps its stand-in. (A secret given to a spoke's environment changes with the
 * spoke's next start.) Started when the first injected secret is handed out. */
#ifndef HUB_SECRETS_WATCH_H
#define HUB_SECRETS_WATCH_H

#include <stddef.h>

struct event_base;
struct proxy_sup;
struct secret_store;
struct secrets_watch;

/* Watches store on base; each injected secret replaced goes to proxy. The watch, or
 * NULL and err (the store cannot be watched: rotation then waits for a restart). */
struct secrets_watch *secrets_watch_start(struct event_base *base, struct secret_store *store,
                                          struct proxy_sup *proxy, char *err, size_t errlen);
void secrets_watch_free(struct secrets_watch *w);

#endif
