#include "spoke_env.h"
#include "secret.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

extern char **environ;

char **spoke_env_build(const struct spoke_env_spec *s)
{
    size_t n = 0, cap = 24;
    for (char **e = s->m->env; *e; e++)
        cap++;
    for (char *const *e = s->secret_env; e && *e; e++)
        cap++;
    char **env = xcalloc(cap + 1, sizeof(char *));
    env[n++] = xstrdup("PATH=/usr/local/bin:/usr/bin:/bin");
    env[n++] = xstrdup("LANG=C.UTF-8");
    env[n++] = xstrdup("TMPDIR=/tmp");
    env[n++] = xasprintf("HOME=%s", s->data_dir);
    env[n++] = xasprintf("SPOKE_NAME=%s", s->m->name);
    env[n++] = xasprintf("SPOKE_ID=%s", s->spoke_id);
    env[n++] = xasprintf("SPOKE_DATA=%s", s->data_dir);
    if (s->https_proxy) {
        env[n++] = xasprintf("HTTPS_PROXY=%s", s->https_proxy);
        env[n++] = xasprintf("https_proxy=%s", s->https_proxy);
        /* Node reads the two above only when told to (22.21+, 24+); older versions
         * ignore it, and their servers need a proxy agent of their own. */
        env[n++] = xstrdup("NODE_USE_ENV_PROXY=1");
    }
    static const char *const trust_vars[] = {"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE",
                                             "CURL_CA_BUNDLE", "GIT_SSL_CAINFO",
                                             "NODE_EXTRA_CA_CERTS"};
    if (s->trust) {
        for (size_t i = 0; i < 4; i++)
            env[n++] = xasprintf("%s=%s", trust_vars[i], HUBCA_JAIL_BUNDLE);
        env[n++] = xasprintf("NODE_EXTRA_CA_CERTS=%s", HUBCA_JAIL_CERT);
    }
    size_t secret_len = s->secret_name ? strlen(s->secret_name) : 0;
    for (char **e = s->m->env; *e; e++) {
        /* The manifest loader already refuses this; checked again where it matters. */
        if (secret_len && strncmp(*e, s->secret_name, secret_len) == 0 && (*e)[secret_len] == '=')
            continue;
        bool trust = false;
        for (size_t i = 0; s->trust && i < ARRAY_LEN(trust_vars); i++)
            trust |= strncmp(*e, trust_vars[i], strlen(trust_vars[i])) == 0 &&
                     (*e)[strlen(trust_vars[i])] == '=';
        if (trust)
            continue; /* the hub's CA must stay trusted for injection to work */
        env[n++] = xstrdup(*e);
    }
    for (char *const *e = s->secret_env; e && *e; e++)
        if (!secret_len || strncmp(*e, s->secret_name, secret_len) != 0 || (*e)[secret_len] != '=')
            env[n++] = xstrdup(*e);
    env[n] = NULL;
    return env;
}

void spoke_env_free(char **env)
{
    if (!env)
        return;
    for (char **e = env; *e; e++) {
        explicit_bzero(*e, strlen(*e));
        free(*e);
    }
    free(env);
}

char *secret_env_take(const char *name)
{
    size_t len = strlen(name);
    char *value = NULL;
    for (char **e = environ; e && *e; e++) {
        if (strncmp(*e, name, len) != 0 || (*e)[len] != '=')
            continue;
        char *v = *e + len + 1;
        if (!value)
            value = secret_strdup(v);
        /* The strings of the initial environment live in the block that
         * /proc/<pid>/environ shows: overwrite them in place. */
        memset(v, 'x', strlen(v));
    }
    unsetenv(name);
    return value;
}

char *datadir_path(const char *root, const char *user, const char *app, const char *instance)
{
    return instance ? xasprintf("%s/%s/%s.%s", root, user, app, instance)
                    : xasprintf("%s/%s/%s", root, user, app);
}

int datadir_prepare(const char *root, const char *user, const char *app, const char *instance,
                    char **path, char *err, size_t errlen)
{
    char *user_dir = xasprintf("%s/%s", root, user);
    char *dir = datadir_path(root, user, app, instance);
    /* Parents traversable but not listable: a jail's uid must pass through them to
     * reach its own directory, and must learn nothing about its neighbours. */
    int rc = mkdir_parents(user_dir, 0711);
    if (rc == 0)
        rc = mkdir_p(dir, 0700);
    if (rc < 0) {
        snprintf(err, errlen, "data directory %s: %s", dir, strerror(errno));
        goto fail;
    }
    struct stat st;
    if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "data directory %s: not a directory", dir);
        goto fail;
    }
    if (chmod(dir, 0700) < 0) {
        snprintf(err, errlen, "data directory %s: %s", dir, strerror(errno));
        goto fail;
    }
    /* Absolute, because the spoke starts in it and may be given it as SPOKE_DATA. */
    char *abs = realpath(dir, NULL);
    if (!abs) {
        snprintf(err, errlen, "data directory %s: %s", dir, strerror(errno));
        goto fail;
    }
    free(user_dir);
    free(dir);
    *path = abs;
    return 0;
fail:
    free(user_dir);
    free(dir);
    return -1;
}
