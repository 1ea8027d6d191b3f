/* Where the configuration is when no --config or --profile is given: the tree's
 * config/ for binaries run from a build directory (build/, build/san/, ...), the
 * system's /etc/isolategpt/ once installed (make install), and the working
 * directory's config/ as the last resort (and for the message when none exists). */
#ifndef ISOLATE_PATHS_H
#define ISOLATE_PATHS_H

#ifndef ISOLATE_SYSCONFDIR
#define ISOLATE_SYSCONFDIR "/etc/isolategpt"
#endif

/* The directory of the running binary (readlink /proc/self/exe), "." if unknown. */
char *paths_exe_dir(void);
/* rel ("hub.json", "profiles/spoke.json") in the first of: <exe dir>/../config,
 * <exe dir>/../../config, ISOLATE_SYSCONFDIR, ./config that exists; ./config/rel when
 * none does. Allocated. */
char *paths_default_config(const char *rel);

#endif
