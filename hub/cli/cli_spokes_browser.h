/* `hub spokes add NAME --browser chromium -- ...`: a browser in the spoke's jail.
 *
 * The jail is the browser's sandbox: chromium may not make namespaces of its own in it
 * (no_new_privs, seccomp), so it runs without its own sandbox and without its zygote,
 * its renderers in the spoke's namespaces, cgroup and seccomp like any process of the
 * spoke, reaching the spoke's /data and its network grants (through netproxy) and
 * nothing else. The profile binds Debian's chromium (the program with what it loads,
 * its resources, fonts), gives it a launcher that adds the flags a jail needs, and sets
 * the limits a browser needs (processes, memory) where the command line did not. */
#ifndef HUB_CLI_SPOKES_BROWSER_H
#define HUB_CLI_SPOKES_BROWSER_H

#include "runtime/runtime.h"

#include <stddef.h>
#include <stdint.h>

/* Where the jail shows the launcher: the executable path to give the server. */
#define BROWSER_LAUNCHER "/opt/browser/chromium"

struct browser_profile {
    const char *exec[3]; /* host programs, NULL-terminated */
    char *binds[5];      /* "HOST:PATH" or "HOST", NULL-terminated (binds[0] malloc'd) */
    const char *env[4];  /* "NAME=VALUE", NULL-terminated */
    uint64_t memory_mb, pids, nproc;
};

/* The profile of browser name ("chromium"), its launcher written into the hub's data
 * root. 0, or -1 and err (an unknown browser, chromium not installed). */
int browser_profile(const char *name, const struct hub_config *cfg, struct browser_profile *bp,
                    char *err, size_t errlen);
void browser_profile_free(struct browser_profile *bp);

#endif
