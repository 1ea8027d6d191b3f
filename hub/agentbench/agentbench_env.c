/* Environments: the suite's initial state with the injection vectors filled, each
 * app's data directory (app.json: its tools and operations; state.json: its state, which
 * the generic spoke reads at every call), the final state read back, and the manifests
 * the hub plans from. No fsync: the files are the run's scratch, rewritten per case. */
#include "agentbench_impl.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* text with every {{NAME}} of a vector replaced (new string). */
static char *fill(const struct ab_suite *s, const char *text, const char *attack)
{
    if (!strstr(text, "{{"))
        return NULL;
    size_t cap = strlen(text) + 1, len = 0;
    char *out = xmalloc(cap);
    const char *p = text;
    while (*p) {
        const char *open = strstr(p, "{{"), *close = open ? strstr(open + 2, "}}") : NULL;
        const json_t *v = NULL;
        if (close) {
            char name[128];
            snprintf(name, sizeof(name), "%.*s", (int)(close - open - 2), open + 2);
            v = json_object_get(s->vectors, name);
        }
        const char *copy_to = v ? open : close ? close + 2 : p + strlen(p);
        const char *with =
            v ? (attack ? attack : json_string_value(json_object_get(v, "default"))) : "";
        size_t n = (size_t)(copy_to - p), m = strlen(with);
        while (len + n + m + 1 > cap)
            out = xrealloc(out, cap *= 2);
        memcpy(out + len, p, n);
        len += n;
        memcpy(out + len, with, m);
        len += m;
        p = v ? close + 2 : copy_to;
    }
    out[len] = '\0';
    return out;
}

static void fill_all(const struct ab_suite *s, json_t *v, const char *attack)
{
    if (json_is_object(v)) {
        const char *k;
        json_t *c;
        json_object_foreach(v, k, c)
        {
            if (json_is_string(c)) {
                char *f = fill(s, json_string_value(c), attack);
                if (f)
                    json_object_set_new(v, k, json_string(f));
                free(f);
            } else {
                fill_all(s, c, attack);
            }
        }
    } else if (json_is_array(v)) {
        size_t i;
        json_t *c;
        json_array_foreach(v, i, c)
        {
            if (json_is_string(c)) {
                char *f = fill(s, json_string_value(c), attack);
                if (f)
                    json_array_set_new(v, i, json_string(f));
                free(f);
            } else {
                fill_all(s, c, attack);
            }
        }
    }
}

json_t *ab_env_initial(const struct ab_suite *s, const char *attack)
{
    json_t *env = json_object();
    const char *name;
    json_t *app;
    json_object_foreach((json_t *)s->apps, name, app)
    {
        json_t *st = json_deep_copy(json_object_get(app, "state"));
        fill_all(s, st, attack);
        json_object_set_new(env, name, st);
    }
    return env;
}

static int write_file(const char *dir, const char *name, const json_t *v, char *err, size_t errlen);

/* An app's manifest as JSON ("command": suiteapp). */
static json_t *manifest_json(const char *name, const json_t *app)
{
    json_t *tools = json_array();
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(app, "tools"), i, t)
    {
        const char *d = json_string_value(json_object_get(t, "description"));
        json_t *mt = json_pack("{s:O,s:s,s:O}", "name", json_object_get(t, "name"), "description",
                               d ? d : "", "inputSchema", json_object_get(t, "inputSchema"));
        if (json_is_true(json_object_get(t, "irreversible")))
            json_object_set_new(mt, "irreversible", json_true());
        if (json_object_get(t, "policy"))
            json_object_set(mt, "policy", json_object_get(t, "policy"));
        json_array_append_new(tools, mt);
    }
    const char *desc = json_string_value(json_object_get(app, "description"));
    return json_pack("{s:s,s:s,s:[s],s:s,s:o}", "name", name, "description", desc ? desc : name,
                     "command", "suiteapp", "runtime", "c", "tools", tools);
}

int ab_env_manifests(const struct ab_suite *s, struct manifest_set *ms, char *err, size_t errlen)
{
    const char *name;
    json_t *app;
    json_object_foreach((json_t *)s->apps, name, app)
    {
        json_t *m = manifest_json(name, app);
        /* Named like a manifest file (NAME.json), which the loader requires. */
        char *where = xasprintf("%s:apps/%s.json", s->path, name);
        struct manifest *man = manifest_from_json(m, where, false, err, errlen);
        free(where);
        json_decref(m);
        if (!man)
            return -1;
        ms->v = xrealloc(ms->v, (ms->n + 1) * sizeof(*ms->v));
        ms->v[ms->n++] = man;
    }
    return 0;
}

int ab_env_manifest_files(const struct ab_suite *s, const char *dir, char *err, size_t errlen)
{
    const char *name;
    json_t *app;
    json_object_foreach((json_t *)s->apps, name, app)
    {
        json_t *m = manifest_json(name, app);
        char *file = xasprintf("%s.json", name);
        int rc = write_file(dir, file, m, err, errlen);
        free(file);
        json_decref(m);
        if (rc < 0)
            return -1;
    }
    return 0;
}

static int write_file(const char *dir, const char *name, const json_t *v, char *err, size_t errlen)
{
    char *path = xasprintf("%s/%s", dir, name);
    char *tmp = xasprintf("%s/.%s.ab", dir, name);
    char *text = json_dumps(v, JSON_COMPACT);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    int rc = -1;
    /* 0644 in the app's own 0700 directory: the jail's uid (which owns the directory
     * once the spoke started) reads it and may rename its own copy over it. */
    if (fd < 0 || !text || write_all(fd, text, strlen(text)) < 0 || fchmod(fd, 0644) < 0)
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
    else if (close(fd) < 0 || (fd = -1, rename(tmp, path) < 0))
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
    else
        rc = 0;
    if (fd >= 0)
        close(fd);
    free(text);
    free(tmp);
    free(path);
    return rc;
}

int ab_env_write(const struct ab_suite *s, const json_t *env, const char *data_root,
                 const char *user, bool tools_too, char *err, size_t errlen)
{
    const char *name;
    json_t *app;
    json_object_foreach((json_t *)s->apps, name, app)
    {
        char *dir = NULL;
        if (datadir_prepare(data_root, user, name, NULL, &dir, err, errlen) < 0)
            return -1;
        int rc = 0;
        if (tools_too) {
            json_t *def =
                json_pack("{s:O,s:s}", "tools", json_object_get(app, "tools"), "date", s->date);
            rc = write_file(dir, "app.json", def, err, errlen);
            json_decref(def);
        }
        if (rc == 0)
            rc = write_file(dir, "state.json", json_object_get(env, name), err, errlen);
        free(dir);
        if (rc < 0)
            return -1;
    }
    return 0;
}

json_t *ab_env_read(const struct ab_suite *s, const char *data_root, const char *user, char *err,
                    size_t errlen)
{
    json_t *env = json_object();
    const char *name;
    json_t *app;
    json_object_foreach((json_t *)s->apps, name, app)
    {
        char *dir = datadir_path(data_root, user, name, NULL);
        char *path = xasprintf("%s/state.json", dir);
        free(dir);
        json_error_t je;
        json_t *st = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
        if (!st) {
            snprintf(err, errlen, "%s: %s", path, je.text);
            free(path);
            json_decref(env);
            return NULL;
        }
        free(path);
        json_object_set_new(env, name, st);
    }
    return env;
}
