/* Rotation without restarting spokes: the hub watches the secret store (inotify), and
 * when `hub secrets set` replaces a secret that netproxy injects for running spokes,
 * the new value goes to netproxy at once and counts from the spoke's next request; the
 * spoke keeps its stand-in. (A secret given to a spoke's environment changes with the
 * spoke's next start.) Started when the first injected secret is handed out. */
#ifndef HUB_SECRETS_WATCH_H
#define HUB_SECRETS_WATCH_H

#include <stddef.h>

struct hub;
struct secrets_watch;

/* 0, or -1 and err (the store cannot be watched: rotation then waits for a restart). */
int secrets_watch_start(struct hub *h, char *err, size_t errlen);
void secrets_watch_free(struct secrets_watch *w);

#endif
