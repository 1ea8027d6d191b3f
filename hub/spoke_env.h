/* What a spoke's process gets: a fresh environment built from nothing (never the
 * hub's, in every mode), and its per-user per-app data directory.
 *
 * The environment holds PATH, HOME, LANG, TMPDIR, SPOKE_NAME, SPOKE_ID, SPOKE_DATA,
 * HTTPS_PROXY/https_proxy in namespace mode for a spoke with network, and the
 * manifest's "env". The variable named by llm.api_key_env is never among them, and
 * secret_env_take() also wipes it from the hub's own initial environment block, so it
 * is not in /proc/<hub>/environ either (a spoke in `none` mode can read that file). */
#ifndef HUB_SPOKE_ENV_H
#define HUB_SPOKE_ENV_H

#include "manifest.h"

#include <stdbool.h>
#include <sys/types.h>

struct spoke_env_spec {
    const struct manifest *m;
    const char *spoke_id;
    const char *data_dir;    /* as the spoke sees it: "/data", or the host path */
    const char *https_proxy; /* "http://169.254.64.1:3128" or NULL */
    const char *secret_name; /* never passed, whatever the manifest says */
};

/* NULL-terminated "NAME=VALUE" list; free with spoke_env_free(). */
char **spoke_env_build(const struct spoke_env_spec *s);
void spoke_env_free(char **env);

/* Copies the variable's value (NULL when unset), then overwrites the value's bytes in
 * the process's initial environment block and removes the variable. */
char *secret_env_take(const char *name);

/* <data_root>/<user>/<app>[/<instance>]: created 0700 (parents 0711), and in namespace
 * mode handed to the jail's host uid (the tree is re-owned when it changed, without
 * following symlinks). 0 and *path, or -1 and err. */
int datadir_prepare(const char *root, const char *user, const char *app, const char *instance,
                    uid_t owner, bool chown_tree, char **path, char *err, size_t errlen);

#endif
