/* Loading the catalog's entries (catalog.h). An entry is checked as strictly as a
 * manifest: unknown keys, a name that is not an app name or not its file's, a source
 * without a version or integrity, a tool without a name are refused with the file and
 * the key, and such an entry is left out of the catalog rather than guessed at. */
#include "catalog.h"
#include "manifest.h"
#include "secrets/secrets.h"
#include "jsonfile.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TEXT_MAX 1024
#define LIST_MAX 64
#define TOOLS_MAX 512

char *catalog_dir(const struct hub_config *cfg)
{
    char *copy = xstrdup(cfg->file ? cfg->file : "./hub.json");
    char *dir = xasprintf("%s/catalog", dirname(copy));
    free(copy);
    return dir;
}

/* An optional array of at most max strings of 1..len bytes. */
static bool strings_ok(struct jf_ctx *c, const json_t *o, const char *where, const char *key,
                       size_t max, size_t len)
{
    char **v = NULL;
    bool ok = jf_strings(c, o, where, key, false, max, len, &v, NULL);
    jf_strv_free(v);
    return ok;
}

/* An optional object whose values are strings. */
static bool string_map_ok(struct jf_ctx *c, const json_t *o, const char *key)
{
    const json_t *m = json_object_get(o, key);
    if (!m)
        return true;
    if (!json_is_object(m) || json_object_size(m) > LIST_MAX)
        return jf_fail(c, "", key, "must be an object of at most %d strings", LIST_MAX);
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)m, k, v)
    {
        if (!json_is_string(v) || !k[0] || json_string_length(v) > 4096)
            return jf_fail(c, key, k, "must be a string of at most 4096 bytes");
    }
    return true;
}

static bool source_ok(struct jf_ctx *c, const json_t *root)
{
    static const char *const keys[] = {"npm", "version", "integrity", "bin", NULL};
    const json_t *s = json_object_get(root, "source");
    const char *v;
    if (!s)
        return jf_fail(c, "", "source", "is required (npm, version, integrity)");
    if (!jf_object(c, s, "source", keys) || !jf_string(c, s, "source", "npm", true, 214, &v) ||
        !jf_string(c, s, "source", "version", true, 64, &v) ||
        !jf_string(c, s, "source", "bin", false, 214, &v) ||
        !jf_string(c, s, "source", "integrity", true, 512, &v))
        return false;
    /* An exact version: a range would install whatever is newest. */
    const char *ver = json_string_value(json_object_get(s, "version"));
    for (const char *p = ver; *p; p++)
        if (!strchr("0123456789.-+abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", *p))
            return jf_fail(c, "source", "version", "must be one exact version (\"%.40s\")", ver);
    if (strncmp(json_string_value(json_object_get(s, "integrity")), "sha512-", 7) != 0)
        return jf_fail(c, "source", "integrity", "must be the registry's sha512-... hash");
    return true;
}

static bool secrets_ok(struct jf_ctx *c, const json_t *root)
{
    static const char *const keys[] = {"env", "secret", "hosts", "header", "query", NULL};
    const json_t *a = json_object_get(root, "secrets");
    if (!a)
        return true;
    if (!json_is_array(a) || json_array_size(a) > LIST_MAX)
        return jf_fail(c, "", "secrets", "must be an array of at most %d objects", LIST_MAX);
    size_t i;
    const json_t *s;
    json_array_foreach(a, i, s)
    {
        char where[32];
        snprintf(where, sizeof(where), "secrets[%zu]", i);
        const char *env, *name, *v;
        if (!jf_object(c, s, where, keys) || !jf_string(c, s, where, "env", true, 128, &env) ||
            !jf_string(c, s, where, "secret", true, SECRET_NAME_MAX, &name) ||
            !jf_string(c, s, where, "header", false, 128, &v) ||
            !jf_string(c, s, where, "query", false, 128, &v) ||
            !strings_ok(c, s, where, "hosts", 16, 253))
            return false;
        if (!secret_name_valid(name))
            return jf_fail(c, where, "secret", "is not a secret name (hub secrets set)");
        size_t k;
        const json_t *h;
        json_array_foreach(json_object_get(s, "hosts"), k, h)
        {
            if (!secret_host_valid(json_string_value(h)))
                return jf_fail(c, where, "hosts", "\"%.80s\" is not a host name",
                               json_string_value(h));
        }
    }
    return true;
}

static bool vars_ok(struct jf_ctx *c, const json_t *root)
{
    static const char *const keys[] = {"default", "description", NULL};
    const json_t *m = json_object_get(root, "vars");
    if (!m)
        return true;
    if (!json_is_object(m) || json_object_size(m) > LIST_MAX)
        return jf_fail(c, "", "vars", "must be an object of at most %d variables", LIST_MAX);
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)m, k, v)
    {
        const char *s;
        for (const char *p = k; *p; p++)
            if (!((*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_'))
                return jf_fail(c, "vars", k, "a variable's name is [A-Z0-9_]+");
        if (!k[0] || !jf_object(c, v, "vars", keys) ||
            !jf_string(c, v, "vars", "default", false, 1024, &s) ||
            !jf_string(c, v, "vars", "description", true, TEXT_MAX, &s))
            return false;
    }
    return true;
}

static bool tools_ok(struct jf_ctx *c, const json_t *root)
{
    const json_t *a = json_object_get(root, "tools");
    if (!json_is_array(a) || json_array_size(a) == 0 || json_array_size(a) > TOOLS_MAX)
        return jf_fail(c, "", "tools",
                       "must be the server's tools as it lists them (1 to %d objects)", TOOLS_MAX);
    size_t i;
    const json_t *t;
    json_array_foreach(a, i, t)
    {
        const char *name = json_string_value(json_object_get(t, "name"));
        if (!json_is_object(t) || !name || !manifest_valid_tool_name(name)) {
            char where[32];
            snprintf(where, sizeof(where), "tools[%zu]", i);
            return jf_fail(c, where, "name", "must be a tool name");
        }
    }
    return true;
}

json_t *catalog_entry_load(const char *path, char *err, size_t errlen)
{
    static const char *const keys[] = {"name",   "title",    "description", "keywords", "notes",
                                       "source", "args",     "runtime",     "allow",    "ports",
                                       "tcp",    "exec",     "env",         "vars",     "secrets",
                                       "limits", "protocol", "tools",       NULL};
    static const char *const limit_keys[] = {"memory_mb",   "nofile", "pids",
                                             "cpu_percent", "call_s", NULL};
    struct jf_ctx c = {.file = path, .err = err, .errlen = errlen};
    json_t *root = jf_load(&c, CATALOG_MAX_ENTRY_BYTES);
    if (!root)
        return NULL;
    const char *name, *s;
    if (!jf_object(&c, root, "", keys) || !jf_string(&c, root, "", "name", true, 64, &name) ||
        !jf_string(&c, root, "", "title", true, 200, &s) ||
        !jf_string(&c, root, "", "description", true, TEXT_MAX, &s) ||
        !jf_string(&c, root, "", "notes", false, TEXT_MAX, &s) ||
        !jf_string(&c, root, "", "runtime", false, 16, &s) ||
        !jf_string(&c, root, "", "protocol", false, 32, &s) ||
        !strings_ok(&c, root, "", "keywords", LIST_MAX, 100) ||
        !strings_ok(&c, root, "", "args", LIST_MAX, 4096) ||
        !strings_ok(&c, root, "", "allow", LIST_MAX, 253) ||
        !strings_ok(&c, root, "", "tcp", MANIFEST_MAX_TCP, 300) ||
        !strings_ok(&c, root, "", "exec", MANIFEST_MAX_EXEC, 4096) ||
        !string_map_ok(&c, root, "env") || !source_ok(&c, root) || !secrets_ok(&c, root) ||
        !vars_ok(&c, root) || !tools_ok(&c, root))
        goto fail;
    if (!manifest_valid_app_name(name)) {
        jf_fail(&c, "", "name", "must be an app name ([a-z][a-z0-9_]{0,63})");
        goto fail;
    }
    char *copy = xstrdup(path);
    char *base = basename(copy);
    bool same = strlen(base) == strlen(name) + 5 && strncmp(base, name, strlen(name)) == 0 &&
                strcmp(base + strlen(name), ".json") == 0;
    free(copy);
    if (!same) {
        jf_fail(&c, "", "name", "must be the file's name without .json");
        goto fail;
    }
    const json_t *ports = json_object_get(root, "ports"), *p;
    size_t i;
    if (ports && !json_is_array(ports)) {
        jf_fail(&c, "", "ports", "must be an array of ports");
        goto fail;
    }
    json_array_foreach(ports, i, p)
    {
        if (!json_is_integer(p) || json_integer_value(p) < 1 || json_integer_value(p) > 65535) {
            jf_fail(&c, "", "ports", "item %zu is not a port", i);
            goto fail;
        }
    }
    const json_t *limits = json_object_get(root, "limits");
    if (limits) {
        if (!jf_object(&c, limits, "limits", limit_keys))
            goto fail;
        const char *k;
        const json_t *v;
        json_object_foreach((json_t *)limits, k, v)
        {
            if (!json_is_integer(v) || json_integer_value(v) < 1 ||
                json_integer_value(v) > (1 << 20)) {
                jf_fail(&c, "limits", k, "must be an integer from 1 to %d", 1 << 20);
                goto fail;
            }
        }
    }
    return root;
fail:
    json_decref(root);
    return NULL;
}

static int cmp_entry(const void *a, const void *b)
{
    return strcmp(((const struct catalog_entry *)a)->name, ((const struct catalog_entry *)b)->name);
}

int catalog_load(const char *dir, struct catalog *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    out->dir = xstrdup(dir);
    DIR *d = opendir(dir);
    if (!d) {
        if (errno == ENOENT)
            return 0;
        snprintf(err, errlen, "%s: %s", dir, strerror(errno));
        return -1;
    }
    struct dirent *de;
    size_t cap = 0;
    while ((de = readdir(d)) && out->n < CATALOG_MAX_ENTRIES) {
        size_t len = strlen(de->d_name);
        if (de->d_name[0] == '.' || len < 6 || strcmp(de->d_name + len - 5, ".json") != 0)
            continue;
        char *path = xasprintf("%s/%s", dir, de->d_name);
        char why[1024];
        json_t *root = catalog_entry_load(path, why, sizeof(why));
        if (!root) {
            out->bad = xrealloc(out->bad, (out->n_bad + 1) * sizeof(char *));
            out->bad[out->n_bad++] = xstrdup(why);
            free(path);
            continue;
        }
        if (out->n == cap) {
            cap = cap ? cap * 2 : 32;
            out->v = xrealloc(out->v, cap * sizeof(*out->v));
        }
        out->v[out->n++] = (struct catalog_entry){
            .path = path,
            .root = root,
            .name = json_string_value(json_object_get(root, "name")),
            .title = json_string_value(json_object_get(root, "title")),
            .description = json_string_value(json_object_get(root, "description"))};
    }
    closedir(d);
    if (out->n)
        qsort(out->v, out->n, sizeof(*out->v), cmp_entry);
    return 0;
}

void catalog_free(struct catalog *c)
{
    for (size_t i = 0; i < c->n; i++) {
        free(c->v[i].path);
        json_decref(c->v[i].root);
    }
    for (size_t i = 0; i < c->n_bad; i++)
        free(c->bad[i]);
    free(c->bad);
    free(c->v);
    free(c->dir);
    memset(c, 0, sizeof(*c));
}

const struct catalog_entry *catalog_find(const struct catalog *c, const char *name)
{
    for (size_t i = 0; i < c->n; i++)
        if (strcmp(c->v[i].name, name) == 0)
            return &c->v[i];
    return NULL;
}
