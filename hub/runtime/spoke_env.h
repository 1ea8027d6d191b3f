/* What a spoke's process gets: a fresh environment built from nothing (never the
 * hub's, in every mode), and its per-user per-app data directory.
 *
 * The environment holds PATH, HOME, LANG, TMPDIR, SPOKE_NAME, SPOKE_ID, SPOKE_DATA,
 * HTTPS_PROXY/https_proxy (and NODE_USE_ENV_PROXY=1, which makes Node 22.21+ and 24+
 * read them) in namespace mode for a spoke with network, and the
 * manifest's "env" (its secrets resolved: a value, or a stand-in), and, for a spoke whose
 * secrets netproxy injects, SSL_CERT_FILE, REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE and
 * GIT_SSL_CAINFO (the system's CAs with the hub's added) and NODE_EXTRA_CA_CERTS (the
 * hub's alone), which the manifest cannot override then. The variable named by llm.api_key_env is never among them, and
 * secret_env_take() also wipes it from the hub's own initial environment block, so it
 * is not in /proc/<hub>/environ either (a spoke in `none` mode can read that file). */
#ifndef HUB_SPOKE_ENV_H
#define HUB_SPOKE_ENV_H

#include "secrets/secrets.h"
#include "config/config.h"

#include <stdbool.h>
#include <sys/types.h>

struct spoke_env_spec {
    const struct manifest *m;
    const char *spoke_id;
    const char *data_dir;    /* as the spoke sees it: "/data", or the host path */
    const char *https_proxy; /* "http://169.254.64.1:3128" or NULL */
    const char *secret_name; /* never passed, whatever the manifest says */
    char *const *secret_env; /* "VAR=value" of the manifest's secrets (spoke_secrets.h) */
    /* The hub's CA when netproxy injects a secret for the spoke: the runtimes' trust
     * variables name it (the jail has it at HUBCA_JAIL_*, bound by proc.c). */
    const struct hub_ca *trust;
};

/* NULL-terminated "NAME=VALUE" list; free with spoke_env_free(), which wipes it (a
 * secret may be among the values). */
char **spoke_env_build(const struct spoke_env_spec *s);
void spoke_env_free(char **env);

/* Copies the variable's value (NULL when unset) into secret memory (lib/secret.h: not
 * inherited by forked children; free with secret_free()), then overwrites the value's bytes in
 * the process's initial environment block and removes the variable. */
char *secret_env_take(const char *name);


/* A spoke's data directory: <data_root>/<user>/<app> for the user's one instance of
 * the app, <data_root>/<user>/<app>.<instance> for a separate instance (a session).
 * Siblings, never nested: the /data bind (and in namespace mode its chown to the
 * jail's uid) covers the whole tree below it, so an instance's directory inside the
 * app's would be another spoke's data. ('.' is in no app name.) */
char *datadir_path(const char *root, const char *user, const char *app, const char *instance);

/* datadir_path(), created 0700 (parents 0711), as an absolute path. Its parents may
 * be private to the hub's user: in namespace mode nsjail-lite's privileged monitor
 * opens the /data bind source and hands it to the jail by descriptor. 0 and *path, or
 * -1 and err. */
int datadir_prepare(const char *root, const char *user, const char *app, const char *instance,
                    char **path, char *err, size_t errlen);

#endif
