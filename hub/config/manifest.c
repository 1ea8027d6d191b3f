#include "manifest.h"
#include "secrets/secrets.h"
#include "termtext.h"
#include "jsonfile.h"
#include "log.h"
#include "netaddr.h"
#include "util.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MANIFEST_MAX_BYTES (1024 * 1024)
#define DESCRIPTION_MAX 16384
#define TITLE_MAX 1024
#define MOUNT_PATH_MAX 1024
#define COMMAND_MAX_ARGS 32
#define ENV_MAX 32
#define DOMAIN_MAX 253

const char *prestart_name(enum prestart p)
{
    switch (p) {
    case PRESTART_UNSET:
        return "unset";
    case PRESTART_NONE:
        return "none";
    case PRESTART_SESSION:
        return "session";
    case PRESTART_SERVICE:
        return "service";
    }
    return "?";
}

bool prestart_parse(const char *s, enum prestart *out)
{
    for (int p = PRESTART_NONE; p <= PRESTART_SERVICE; p++)
        if (strcmp(s, prestart_name((enum prestart)p)) == 0) {
            *out = (enum prestart)p;
            return true;
        }
    return false;
}

bool manifest_valid_app_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > MANIFEST_NAME_MAX || !(s[0] >= 'a' && s[0] <= 'z') || s[n - 1] == '_')
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_') ||
            (s[i] == '_' && s[i + 1] == '_'))
            return false;
    return true;
}

bool manifest_valid_tool_name(const char *s)
{
    return name_chars_valid(s, strlen(s), MANIFEST_NAME_MAX, "_-");
}

bool manifest_split_name(const char *full, char *app, size_t app_size, char *tool, size_t tool_size,
                         char *err, size_t errlen)
{
    const char *dot = strchr(full, '.');
    if (!dot) {
        snprintf(err, errlen, "tool must be named APP.TOOL");
        return false;
    }
    size_t alen = (size_t)(dot - full);
    if (alen >= app_size || strlen(dot + 1) >= tool_size) {
        snprintf(err, errlen, "tool name too long");
        return false;
    }
    memcpy(app, full, alen);
    app[alen] = '\0';
    strcpy(tool, dot + 1);
    if (!manifest_valid_app_name(app)) {
        snprintf(err, errlen, "invalid app name in \"%.80s\"", full);
        return false;
    }
    if (!manifest_valid_tool_name(tool)) {
        snprintf(err, errlen, "invalid tool name in \"%.80s\"", full);
        return false;
    }
    return true;
}

/* Lower-case host names only: netproxy canonicalises and checks eTLD+1 itself; this
 * catches typos (a URL, a port, upper case) before they silently allow nothing. */
static bool valid_domain(const char *d)
{
    size_t n = strlen(d);
    if (n == 0 || n > DOMAIN_MAX || d[0] == '.' || d[0] == '-' || d[n - 1] == '.')
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((d[i] >= 'a' && d[i] <= 'z') || (d[i] >= '0' && d[i] <= '9') || d[i] == '-' ||
              d[i] == '.'))
            return false;
    return strchr(d, '.') != NULL;
}

/* HOST:PORT, HOST a name, an IPv4 address or [IPv6]; port 1..65535 without zeros in
 * front. *addr gets the address when HOST is one. */
static bool parse_tcp_grant(const char *g, struct sockaddr_storage *addr, bool *is_addr)
{
    const char *colon = strrchr(g, ':');
    if (!colon || colon == g || strlen(colon + 1) > 5 || colon[1] == '0')
        return false;
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (*end || port < 1 || port > 65535)
        return false;
    char host[DOMAIN_MAX + 3];
    size_t n = (size_t)(colon - g);
    if (n >= sizeof(host))
        return false;
    memcpy(host, g, n);
    host[n] = '\0';
    memset(addr, 0, sizeof(*addr));
    struct sockaddr_in *in = (struct sockaddr_in *)addr;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)addr;
    *is_addr = true;
    if (inet_pton(AF_INET, host, &in->sin_addr) == 1) {
        in->sin_family = AF_INET;
        return true;
    }
    if (n > 2 && host[0] == '[' && host[n - 1] == ']') {
        host[n - 1] = '\0';
        in6->sin6_family = AF_INET6;
        return inet_pton(AF_INET6, host + 1, &in6->sin6_addr) == 1;
    }
    *is_addr = false;
    return valid_domain(host);
}

bool manifest_tcp_valid(const char *grant)
{
    struct sockaddr_storage ss;
    bool is_addr;
    return parse_tcp_grant(grant, &ss, &is_addr);
}

bool manifest_tcp_loopback(const char *grant)
{
    struct sockaddr_storage ss;
    bool is_addr;
    return parse_tcp_grant(grant, &ss, &is_addr) && is_addr &&
           addr_classify((struct sockaddr *)&ss) == ADDR_LOOPBACK;
}

static bool valid_env_name(const char *s)
{
    if (!*s || !((*s >= 'A' && *s <= 'Z') || *s == '_'))
        return false;
    for (; *s; s++)
        if (!((*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_'))
            return false;
    return true;
}

/* Names the hub sets itself, and names that change how the dynamic loader or the
 * proxy settings behave: a manifest must not override them. */
static bool reserved_env_name(const char *s)
{
    static const char *const reserved[] = {
        "PATH", "HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "NO_PROXY", "NODE_USE_ENV_PROXY", NULL};
    if (strncmp(s, "SPOKE_", 6) == 0 || strncmp(s, "LD_", 3) == 0)
        return true;
    for (size_t i = 0; reserved[i]; i++)
        if (strcmp(s, reserved[i]) == 0)
            return true;
    return false;
}

bool manifest_tool_key_is_local(const char *key)
{
    return strcmp(key, "irreversible") == 0 || strcmp(key, "policy") == 0;
}

/* An empty schema but for "$schema": what zod-to-json-schema 3 makes of zod 4's schemas
 * (npm resolves that pair for the SDK 1.0.x servers installed alone: server-gitlab). */
static bool schema_is_empty(const json_t *js)
{
    size_t n = json_object_size(js);
    return n == 0 || (n == 1 && json_object_get(js, "$schema"));
}

/* An MCP tool schema: a JSON Schema object whose type is "object". Refused otherwise,
 * as the TypeScript SDK's client refuses it: an empty schema describes no argument,
 * so neither the hub's validation nor the model would know what the tool takes. */
static bool load_tool_schema(struct jf_ctx *c, const json_t *t, const char *where, const char *key,
                             bool required, struct schema **out)
{
    json_t *js = json_object_get(t, key);
    if (!js)
        return required ? jf_fail(c, where, key, "is required") : true;
    if (json_is_object(js) && schema_is_empty(js))
        return jf_fail(c, where, key,
                       "is empty (no \"type\": \"object\", no properties): the server's "
                       "zod-to-json-schema could not convert its zod schemas, usually zod 4 "
                       "resolved beside zod-to-json-schema 3; install the server with zod 3 "
                       "beside it (npm install PACKAGE zod@3)");
    if (!json_is_object(js) || !json_is_string(json_object_get(js, "type")) ||
        strcmp(json_string_value(json_object_get(js, "type")), "object") != 0)
        return jf_fail(c, where, key, "must be a schema with \"type\": \"object\"%s",
                       required ? "" : " (MCP structuredContent)");
    char serr[384];
    *out = schema_compile(js, serr, sizeof(serr));
    if (!*out)
        return jf_fail(c, where, key, "%s", serr);
    return true;
}

/* Adds the hidden characters of every string in v (keys too) to h; where (a path)
 * names the first string that has any. */
static void hidden_walk(const json_t *v, struct tt_hidden *h, char *path, size_t plen, char *first,
                        size_t firstlen)
{
    struct tt_hidden one;
    if (json_is_string(v)) {
        if (tt_hidden_count(json_string_value(v), json_string_length(v), &one)) {
            if (!(h->controls || h->tags || h->bidi || h->invisible))
                snprintf(first, firstlen, "%s", path[0] ? path : ".");
            h->controls += one.controls;
            h->tags += one.tags;
            h->bidi += one.bidi;
            h->invisible += one.invisible;
        }
        return;
    }
    size_t len = strlen(path);
    if (json_is_object(v)) {
        const char *key;
        json_t *x;
        json_object_foreach((json_t *)v, key, x)
        {
            json_t *k = json_string(key);
            hidden_walk(k, h, path, plen, first, firstlen);
            json_decref(k);
            snprintf(path + len, plen - len, ".%.60s", key);
            hidden_walk(x, h, path, plen, first, firstlen);
            path[len] = '\0';
        }
    } else if (json_is_array(v)) {
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x)
        {
            snprintf(path + len, plen - len, "[%zu]", i);
            hidden_walk(x, h, path, plen, first, firstlen);
            path[len] = '\0';
        }
    }
}

bool manifest_hidden_chars(const json_t *v, struct tt_hidden *h, char *first, size_t firstlen)
{
    char path[256] = "";
    memset(h, 0, sizeof(*h));
    if (firstlen)
        first[0] = '\0';
    hidden_walk(v, h, path, sizeof(path), first, firstlen);
    return h->controls || h->tags || h->bidi;
}

static bool load_tool(struct jf_ctx *c, const json_t *t, size_t idx, struct manifest_tool *out)
{
    static const char *const keys[] = {"name",         "title",        "description", "inputSchema",
                                       "outputSchema", "annotations",  "icons",       "execution",
                                       "_meta",        "irreversible", "policy",      NULL};
    char where[32];
    snprintf(where, sizeof(where), "tools[%zu]", idx);
    if (!jf_object(c, t, where, keys))
        return false;
    const char *name = NULL, *desc = "", *title = NULL;
    if (!jf_string(c, t, where, "name", true, MANIFEST_NAME_MAX, &name) ||
        !jf_string(c, t, where, "title", false, TITLE_MAX, &title) ||
        !jf_string(c, t, where, "description", false, DESCRIPTION_MAX, &desc) ||
        !jf_bool(c, t, where, "irreversible", false, &out->irreversible))
        return false;
    if (!manifest_valid_tool_name(name))
        return jf_fail(c, where, "name", "must match [A-Za-z0-9_-]{1,64}");
    /* What the model reads and the admin pinned must be what anyone sees: a description
     * with invisible Unicode tags or bidi controls says more than it shows. */
    struct tt_hidden h;
    char first[256];
    if (manifest_hidden_chars(t, &h, first, sizeof(first)))
        return jf_fail(c, where, first[0] == '.' && first[1] ? first + 1 : first,
                       "holds characters a reader does not see (%zu Unicode tags, %zu "
                       "bidirectional controls, %zu control characters): refused",
                       h.tags, h.bidi, h.controls);
    static const char *const objects[] = {"annotations", "execution", "_meta", NULL};
    for (size_t i = 0; objects[i]; i++) {
        json_t *v = json_object_get(t, objects[i]);
        if (v && !json_is_object(v))
            return jf_fail(c, where, objects[i], "must be an object");
    }
    json_t *icons = json_object_get(t, "icons");
    if (icons) {
        size_t i;
        json_t *icon;
        if (!json_is_array(icons))
            return jf_fail(c, where, "icons", "must be an array of icon objects");
        json_array_foreach(icons, i, icon)
        {
            if (!json_is_object(icon) || !json_is_string(json_object_get(icon, "src")))
                return jf_fail(c, where, "icons", "item %zu must be an object with a \"src\"", i);
        }
    }
    out->name = xstrdup(name);
    out->description = xstrdup(desc);
    /* The pin: the object as the server sends it, without this project's keys. */
    out->object = json_deep_copy(t);
    json_object_del(out->object, "irreversible"); /* manifest_tool_key_is_local() */
    json_object_del(out->object, "policy");
    /* Where each argument may come from (hub/assistant/policy.h checks the rules). */
    json_t *policy = json_object_get(t, "policy");
    if (policy && !json_is_object(policy))
        return jf_fail(c, where, "policy", "must be an object of ARGUMENT: {\"from\": [...]}");
    out->policy = json_incref(policy);
    out->input_schema_json = json_object_get(out->object, "inputSchema");
    out->output_schema_json = json_object_get(out->object, "outputSchema");
    return load_tool_schema(c, t, where, "inputSchema", true, &out->input) &&
           load_tool_schema(c, t, where, "outputSchema", false, &out->output);
}

static bool load_network(struct jf_ctx *c, const json_t *root, struct manifest *m)
{
    static const char *const keys[] = {"allow", "ports", "tcp", NULL};
    json_t *net = json_object_get(root, "network");
    m->allow = xcalloc(1, sizeof(char *));
    m->tcp = xcalloc(1, sizeof(char *));
    if (!net)
        return true;
    if (!jf_object(c, net, "network", keys))
        return false;
    char **allow = NULL;
    size_t n = 0;
    if (!jf_strings(c, net, "network", "allow", false, 256, DOMAIN_MAX, &allow, &n))
        return false;
    if (allow) {
        free(m->allow);
        m->allow = allow;
        m->n_allow = n;
    }
    for (size_t i = 0; i < m->n_allow; i++)
        if (!valid_domain(m->allow[i]))
            return jf_fail(c, "network", "allow",
                           "item %zu (\"%.80s\") must be a lower-case domain name", i, m->allow[i]);
    char **tcp = NULL;
    if (!jf_strings(c, net, "network", "tcp", false, MANIFEST_MAX_TCP, DOMAIN_MAX + 8, &tcp, &n))
        return false;
    if (tcp) {
        free(m->tcp);
        m->tcp = tcp;
        m->n_tcp = n;
    }
    for (size_t i = 0; i < m->n_tcp; i++)
        if (!manifest_tcp_valid(m->tcp[i]))
            return jf_fail(c, "network", "tcp",
                           "item %zu (\"%.80s\") must be HOST:PORT (a lower-case name, an IPv4 "
                           "address or [IPv6], and a port from 1 to 65535)",
                           i, m->tcp[i]);
    json_t *ports = json_object_get(net, "ports");
    if (ports) {
        if (!json_is_array(ports) || json_array_size(ports) == 0 ||
            json_array_size(ports) > MANIFEST_MAX_PORTS)
            return jf_fail(c, "network", "ports", "must be an array of 1 to %d ports",
                           MANIFEST_MAX_PORTS);
        size_t i;
        json_t *p;
        json_array_foreach(ports, i, p)
        {
            if (!json_is_integer(p) || json_integer_value(p) < 1 || json_integer_value(p) > 65535)
                return jf_fail(c, "network", "ports", "item %zu must be a port from 1 to 65535", i);
            m->ports[m->n_ports++] = (uint16_t)json_integer_value(p);
        }
    } else {
        m->ports[m->n_ports++] = 443;
    }
    return true;
}

static bool load_limits(struct jf_ctx *c, const json_t *root, struct manifest *m)
{
    static const char *const keys[] = {"cpu_s", "as_mb",       "fsize_mb", "nofile",
                                       "nproc", "wall_s",      "call_s",   "memory_mb",
                                       "pids",  "cpu_percent", "start_s",  NULL};
    json_t *l = json_object_get(root, "limits");
    if (!l)
        return true;
    if (!jf_object(c, l, "limits", keys))
        return false;
    struct {
        const char *key;
        uint64_t *dst;
        int64_t max;
    } f[] = {
        {"cpu_s", &m->limits.cpu_s, 86400},         {"as_mb", &m->limits.as_mb, 1 << 20},
        {"fsize_mb", &m->limits.fsize_mb, 1 << 20}, {"nofile", &m->limits.nofile, 1 << 20},
        {"nproc", &m->limits.nproc, 1 << 16},       {"wall_s", &m->limits.wall_s, 86400 * 7},
        {"call_s", &m->limits.call_s, 86400},       {"memory_mb", &m->limits.memory_mb, 1 << 20},
        {"pids", &m->limits.pids, 1 << 16},         {"cpu_percent", &m->limits.cpu_percent, 100000},
        {"start_s", &m->limits.start_s, 600},
    };
    for (size_t i = 0; i < ARRAY_LEN(f); i++) {
        int64_t v = 0;
        if (!jf_int(c, l, "limits", f[i].key, false, 1, f[i].max, &v))
            return false;
        *f[i].dst = (uint64_t)v;
    }
    return true;
}

/* "warm": a held node takes over node's start (hub/runtime/held_node.cjs), so the
 * command must be node's own start of a file: `node ENTRY [ARGS...]`, no node options
 * (the loader stands between node and ENTRY). Called after runtime and command. */
static bool load_warm(struct jf_ctx *c, const json_t *root, struct manifest *m)
{
    if (!jf_bool(c, root, "", "warm", false, &m->warm))
        return false;
    if (!m->warm)
        return true;
    if (strcmp(m->runtime, "node") != 0)
        return jf_fail(c, "", "warm", "is for runtime \"node\" only (this spoke's is \"%s\")",
                       m->runtime);
    const char *prog = m->command[0], *base = strrchr(prog, '/');
    base = base ? base + 1 : prog;
    if ((strcmp(base, "node") != 0 && strcmp(base, "nodejs") != 0) || !m->command[1] ||
        m->command[1][0] == '-')
        return jf_fail(c, "", "warm",
                       "needs a command of the form [\"node\", \"ENTRY.js\", ARGS...], without "
                       "node options before the entry (this one starts with \"%s\"%s%s)",
                       prog, m->command[1] ? ", \"" : "", m->command[1] ? m->command[1] : "");
    if (m->image)
        return jf_fail(c, "", "warm", "is not for container images");
    return true;
}

/* max_inflight, prestart, idle_s: how the hub serves the spoke (docs/hub-and-manifests.md,
 * "Serving a spoke"). */
static bool load_serving(struct jf_ctx *c, const json_t *root, struct manifest *m)
{
    int64_t inflight = 0, idle = -1;
    const char *prestart = NULL;
    if (!jf_int(c, root, "", "max_inflight", false, 1, MAX_INFLIGHT_LIMIT, &inflight) ||
        !jf_int(c, root, "", "idle_s", false, 0, 86400 * 365, &idle) ||
        !jf_string(c, root, "", "prestart", false, 16, &prestart))
        return false;
    m->max_inflight = (unsigned)inflight;
    m->idle_s = idle;
    m->prestart = PRESTART_UNSET;
    if (prestart && !prestart_parse(prestart, &m->prestart))
        return jf_fail(c, "", "prestart", "must be \"none\", \"session\" or \"service\"");
    return load_warm(c, root, m);
}

static bool load_env(struct jf_ctx *c, const json_t *root, struct manifest *m)
{
    json_t *env = json_object_get(root, "env");
    m->env = xcalloc(ENV_MAX + 1, sizeof(char *));
    if (!env)
        return true;
    if (!json_is_object(env) || json_object_size(env) > ENV_MAX)
        return jf_fail(c, "", "env",
                       "must be an object of at most %d NAME: \"value\" or NAME: "
                       "{\"secret\": \"SECRET\"} pairs",
                       ENV_MAX);
    size_t n = 0;
    const char *name;
    json_t *v;
    json_object_foreach(env, name, v)
    {
        if (!valid_env_name(name))
            return jf_fail(c, "env", name, "must be a name of A-Z, 0-9 and _");
        if (reserved_env_name(name))
            return jf_fail(c, "env", name, "is set by the hub and cannot be overridden");
        if (json_is_object(v)) {
            /* "plain": true hands a secret set with hosts to the spoke as it is, on
             * purpose (hub spokes add --secret-plain); audited at each start. */
            static const char *const keys[] = {"secret", "plain", NULL};
            char where[80];
            snprintf(where, sizeof(where), "env.%s", name);
            const char *secret = NULL;
            bool plain = false;
            if (!jf_object(c, v, where, keys) ||
                !jf_string(c, v, where, "secret", true, SECRET_NAME_MAX, &secret) ||
                !jf_bool(c, v, where, "plain", false, &plain))
                return false;
            if (!secret_name_valid(secret))
                return jf_fail(c, where, "secret",
                               "must be a secret's name (1 to 64 of A-Z a-z 0-9 _ . -)");
            m->secret_env = xrealloc(m->secret_env, (m->n_secret_env + 1) * sizeof(*m->secret_env));
            m->secret_env[m->n_secret_env++] = (struct manifest_secret_env){
                .var = xstrdup(name), .secret = xstrdup(secret), .plain = plain};
            continue;
        }
        if (!json_is_string(v) || json_string_length(v) > 4096 ||
            memchr(json_string_value(v), '\0', json_string_length(v)))
            return jf_fail(c, "env", name,
                           "must be a string of at most 4096 bytes, or {\"secret\": \"NAME\"}");
        m->env[n++] = xasprintf("%s=%s", name, json_string_value(v));
    }
    return true;
}

char *manifest_keylike_env(const struct manifest *m)
{
    char *out = NULL;
    for (char **e = m->env; e && *e; e++) {
        const char *eq = strchr(*e, '='), *why;
        if (!eq || !keylike(eq + 1, &why))
            continue;
        char *line = xasprintf("%s%s: env.%.*s looks like %s; keep it in the secret store "
                               "(hub secrets set NAME, then \"env\": {\"%.*s\": {\"secret\": "
                               "\"NAME\"}})\n",
                               out ? out : "", m->file ? m->file : m->name, (int)(eq - *e), *e, why,
                               (int)(eq - *e), *e);
        free(out);
        out = line;
    }
    return out;
}

/* An absolute path without "." or ".." parts, doubled or trailing slashes. */
static bool clean_abs_path(const char *p)
{
    if (p[0] != '/' || strlen(p) > MOUNT_PATH_MAX)
        return false;
    for (const char *s = p; *s;) {
        const char *e = strchr(s + 1, '/');
        size_t n = e ? (size_t)(e - s - 1) : strlen(s + 1);
        if (n == 0 && (e || s != p))
            return false; /* "//" or a trailing "/" */
        if ((n == 1 && s[1] == '.') || (n == 2 && s[1] == '.' && s[2] == '.'))
            return false;
        if (!e)
            break;
        s = e;
    }
    return true;
}

/* Where a mount may not go: over the jail's own /data, its kernel interfaces or its
 * root. */
bool manifest_mount_dst_reserved(const char *d)
{
    static const char *const reserved[] = {"/data", "/proc", "/dev", "/sys", "/tmp", NULL};
    if (strcmp(d, "/") == 0)
        return true;
    for (size_t i = 0; reserved[i]; i++) {
        size_t n = strlen(reserved[i]);
        if (strncmp(d, reserved[i], n) == 0 && (d[n] == '\0' || d[n] == '/'))
            return true;
    }
    return false;
}

char *manifest_host_path(const struct manifest *m, const char *arg)
{
    for (size_t i = 0; i < m->n_mounts; i++) {
        const struct manifest_mount *mt = &m->mounts[i];
        size_t n = strlen(mt->dst);
        if (strcmp(mt->src, mt->dst) != 0 && strncmp(arg, mt->dst, n) == 0 &&
            (arg[n] == '\0' || arg[n] == '/'))
            return xasprintf("%s%s", mt->src, arg + n);
    }
    return xstrdup(arg);
}

/* "exec": host programs the spoke may run, absolute paths (nsjail-lite binds each with
 * what it loads and allows processes). */
static bool load_exec(struct jf_ctx *c, const json_t *root, struct manifest *m)
{
    if (!jf_strings(c, root, "", "exec", false, MANIFEST_MAX_EXEC, MOUNT_PATH_MAX, &m->exec,
                    &m->n_exec))
        return false;
    if (!m->exec)
        m->exec = xcalloc(1, sizeof(char *));
    for (size_t i = 0; i < m->n_exec; i++)
        if (!clean_abs_path(m->exec[i]))
            return jf_fail(c, "", "exec",
                           "item %zu (\"%.80s\") must be an absolute path without \".\" or "
                           "\"..\"",
                           i, m->exec[i]);
    return true;
}

static bool load_mounts(struct jf_ctx *c, const json_t *root, struct manifest *m)
{
    char **v = NULL;
    size_t n = 0;
    if (!jf_strings(c, root, "", "mounts", false, MANIFEST_MAX_MOUNTS, 2 * MOUNT_PATH_MAX + 1, &v,
                    &n))
        return false;
    bool ok = true;
    for (size_t i = 0; v && v[i] && ok; i++) {
        char *src = xstrdup(v[i]);
        char *colon = strchr(src, ':');
        char *dst = xstrdup(colon ? colon + 1 : src);
        if (colon)
            *colon = '\0';
        m->mounts[m->n_mounts].src = src;
        m->mounts[m->n_mounts].dst = dst;
        m->n_mounts++;
        if (!clean_abs_path(src) || !clean_abs_path(dst))
            ok = jf_fail(c, "", "mounts",
                         "item %zu (\"%.80s\") must be HOSTPATH or HOSTPATH:PATH, absolute paths "
                         "without \".\" or \"..\"",
                         i, v[i]);
        else if (manifest_mount_dst_reserved(dst))
            ok = jf_fail(c, "", "mounts",
                         "item %zu (\"%.80s\") cannot be bound over /, /data, /proc, /dev, /sys "
                         "or /tmp",
                         i, v[i]);
    }
    jf_strv_free(v);
    return ok;
}

static char *resolve_relative(const char *file, const char *path)
{
    if (path[0] == '/')
        return xstrdup(path);
    char *copy = xstrdup(file);
    char *dir = dirname(copy);
    char *r = xasprintf("%s/%s", dir, path);
    free(copy);
    return r;
}

/* "package": where `hub spokes add npm:...` installed the server (for update and
 * verify; the hub itself starts the command as any other). */
static bool load_package(struct jf_ctx *c, const json_t *root)
{
    static const char *const keys[] = {"npm", "spec",    "version", "integrity",
                                       "dir", "scripts", NULL};
    const json_t *p = json_object_get(root, "package");
    if (!p)
        return true;
    if (!jf_object(c, p, "package", keys))
        return false;
    const char *v;
    bool b;
    return jf_string(c, p, "package", "npm", true, 214, &v) &&
           jf_string(c, p, "package", "spec", false, 256, &v) &&
           jf_string(c, p, "package", "version", true, 256, &v) &&
           jf_string(c, p, "package", "integrity", false, 512, &v) &&
           jf_string(c, p, "package", "dir", true, 4096, &v) &&
           jf_bool(c, p, "package", "scripts", false, &b);
}

/* "image": the container image `hub spokes add oci:REF` pulled (cli_spokes_oci.c): its
 * reference, the digest pinned, where its root and profile are, the registry's secret's
 * name (never its value). The hub runs it through "profile" like any other spoke. */
static bool load_image(struct jf_ctx *c, const json_t *root)
{
    static const char *const keys[] = {"ref", "digest", "dir", "secret", "args", NULL};
    const json_t *p = json_object_get(root, "image");
    if (!p)
        return true;
    const char *v;
    if (!jf_object(c, p, "image", keys) || !jf_string(c, p, "image", "ref", true, 255, &v) ||
        !jf_string(c, p, "image", "digest", true, 71, &v) ||
        !jf_string(c, p, "image", "dir", true, 4096, &v) ||
        !jf_string(c, p, "image", "secret", false, SECRET_NAME_MAX, &v))
        return false;
    char **args = NULL;
    if (!jf_strings(c, p, "image", "args", false, COMMAND_MAX_ARGS, 4096, &args, NULL))
        return false;
    jf_strv_free(args);
    v = json_string_value(json_object_get(p, "digest"));
    if (strncmp(v, "sha256:", 7) != 0 || strlen(v) != 71)
        return jf_fail(c, "image", "digest", "must be sha256:HEX (64 digits)");
    if (!json_object_get(root, "profile"))
        return jf_fail(c, "image", "profile",
                       "an image's manifest names its profile (the image's root)");
    return true;
}

static bool load_root(struct jf_ctx *c, const json_t *root, const char *path, bool allow_no_tools,
                      struct manifest *m)
{
    static const char *const keys[] = {
        "name",         "description", "command", "runtime", "profile",     "network", "limits",
        "env",          "mounts",      "exec",    "tools",   "protocol",    "roots",   "package",
        "max_inflight", "prestart",    "idle_s",  "image",   "secret_scan", "warm",    NULL};
    if (!jf_object(c, root, "", keys))
        return false;
    const char *name = NULL, *desc = NULL, *runtime = "c", *profile = NULL, *protocol = NULL;
    if (!jf_string(c, root, "", "name", true, MANIFEST_NAME_MAX, &name) ||
        !jf_string(c, root, "", "description", true, DESCRIPTION_MAX, &desc) ||
        !jf_string(c, root, "", "runtime", false, 32, &runtime) ||
        !jf_string(c, root, "", "profile", false, 4096, &profile) ||
        !jf_string(c, root, "", "protocol", false, 32, &protocol))
        return false;
    m->roots = true;
    if (!jf_bool(c, root, "", "roots", false, &m->roots) || !load_package(c, root) ||
        !load_image(c, root))
        return false;
    m->image = json_object_get(root, "image") != NULL;
    const char *scan = NULL;
    if (!jf_string(c, root, "", "secret_scan", false, 16, &scan))
        return false;
    if (scan && (m->secret_scan = secretscan_policy_parse(scan)) == 0)
        return jf_fail(c, "", "secret_scan", "must be \"block\", \"redact\", \"ask\" or \"log\"");
    if (protocol && (m->protocol = mcpver_parse(protocol)) == MCP_V_UNKNOWN)
        return jf_fail(c, "", "protocol",
                       "must be an MCP revision the hub speaks (2024-11-05 to %s)",
                       mcpver_name(MCP_V_LATEST));
    struct tt_hidden h;
    if (tt_hidden_count(desc, strlen(desc), &h) && (h.tags || h.bidi || h.controls))
        return jf_fail(c, "", "description",
                       "holds characters a reader does not see (%zu Unicode tags, %zu "
                       "bidirectional controls, %zu control characters): refused",
                       h.tags, h.bidi, h.controls);
    if (!manifest_valid_app_name(name))
        return jf_fail(c, "", "name",
                       "must match [a-z][a-z0-9_]{0,63} with no \"__\" and no \"_\" at the end "
                       "(hub serve names tools APP__TOOL, and those names must be one app's)");
    char *base = xstrdup(path);
    char *fname = basename(base);
    size_t flen = strlen(fname);
    bool same = flen == strlen(name) + 5 && strncmp(fname, name, strlen(name)) == 0;
    free(base);
    if (!same)
        return jf_fail(c, "", "name", "must equal the file name (NAME.json)");
    m->name = xstrdup(name);
    m->description = xstrdup(desc);
    if (strcmp(runtime, "c") != 0 && strcmp(runtime, "python") != 0 && strcmp(runtime, "node") != 0)
        return jf_fail(c, "", "runtime", "must be \"c\", \"python\" or \"node\"");
    m->runtime = xstrdup(runtime);
    if (profile)
        m->profile = resolve_relative(path, profile);
    if (!jf_strings(c, root, "", "command", true, COMMAND_MAX_ARGS, 4096, &m->command, NULL))
        return false;
    if (!m->command[0])
        return jf_fail(c, "", "command", "must name a program");
    if (!load_network(c, root, m) || !load_limits(c, root, m) || !load_serving(c, root, m) ||
        !load_env(c, root, m) || !load_mounts(c, root, m) || !load_exec(c, root, m))
        return false;
    json_t *tools = json_object_get(root, "tools");
    m->unpinned = allow_no_tools && json_array_size(tools) == 0;
    if (allow_no_tools && !tools)
        return true;
    if (!json_is_array(tools) || (json_array_size(tools) == 0 && !allow_no_tools) ||
        json_array_size(tools) > MANIFEST_MAX_TOOLS)
        return jf_fail(c, "", "tools", "must be an array of 1 to %d tools", MANIFEST_MAX_TOOLS);
    m->tools = xcalloc(json_array_size(tools) + 1, sizeof(*m->tools));
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t)
    {
        m->n_tools++;
        if (!load_tool(c, t, i, &m->tools[i]))
            return false;
        for (size_t j = 0; j < i; j++)
            if (strcmp(m->tools[j].name, m->tools[i].name) == 0) {
                char where[32];
                snprintf(where, sizeof(where), "tools[%zu]", i);
                return jf_fail(c, where, "name", "duplicate tool name");
            }
        json_array_append(m->pinned, m->tools[i].object);
    }
    return true;
}

struct manifest *manifest_from_json(const json_t *root, const char *path, bool allow_no_tools,
                                    char *err, size_t errlen)
{
    struct jf_ctx c = {.file = path, .err = err, .errlen = errlen};
    struct manifest *m = xcalloc(1, sizeof(*m));
    m->file = xstrdup(path);
    m->pinned = json_array();
    if (!load_root(&c, root, path, allow_no_tools, m)) {
        manifest_free(m);
        return NULL;
    }
    return m;
}

struct manifest *manifest_load(const char *path, char *err, size_t errlen)
{
    struct jf_ctx c = {.file = path, .err = err, .errlen = errlen};
    json_t *root = jf_load(&c, MANIFEST_MAX_BYTES);
    if (!root)
        return NULL;
    struct manifest *m = manifest_from_json(root, path, false, err, errlen);
    if (m)
        m->canonical = json_dumps(root, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(root);
    /* A key-like env value is warned about where the app is added or started
     * (spoke.c), not by every command that loads it. */
    return m;
}

void manifest_free(struct manifest *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n_tools; i++) {
        struct manifest_tool *t = &m->tools[i];
        free(t->name);
        free(t->description);
        json_decref(t->object);
        json_decref(t->policy);
        schema_free(t->input);
        schema_free(t->output);
    }
    free(m->tools);
    json_decref(m->pinned);
    free(m->canonical);
    free(m->file);
    free(m->name);
    free(m->description);
    jf_strv_free(m->command);
    free(m->runtime);
    free(m->profile);
    jf_strv_free(m->allow);
    jf_strv_free(m->tcp);
    jf_strv_free(m->exec);
    jf_strv_free(m->env);
    for (size_t i = 0; i < m->n_secret_env; i++) {
        free(m->secret_env[i].var);
        free(m->secret_env[i].secret);
    }
    free(m->secret_env);
    for (size_t i = 0; i < m->n_mounts; i++) {
        free(m->mounts[i].src);
        free(m->mounts[i].dst);
    }
    free(m);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

bool manifest_is_file_name(const char *name)
{
    size_t len = strlen(name);
    return name[0] != '.' && len >= 6 && strcmp(name + len - 5, ".json") == 0;
}

int manifest_set_load(const char *dir, struct manifest_set *set, char *err, size_t errlen)
{
    memset(set, 0, sizeof(*set));
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(err, errlen, "%s: %s", dir, strerror(errno));
        return -1;
    }
    char **names = NULL;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!manifest_is_file_name(e->d_name))
            continue;
        names = xrealloc(names, (n + 1) * sizeof(char *));
        names[n++] = xstrdup(e->d_name);
    }
    closedir(d);
    if (n) /* qsort(NULL, 0, ...) is undefined */
        qsort(names, n, sizeof(char *), cmp_str);
    int rc = 0;
    set->v = xcalloc(n + 1, sizeof(*set->v));
    for (size_t i = 0; i < n; i++) {
        char *path = xasprintf("%s/%s", dir, names[i]);
        struct manifest *m = rc == 0 ? manifest_load(path, err, errlen) : NULL;
        free(path);
        if (rc == 0 && !m)
            rc = -1;
        if (m)
            set->v[set->n++] = m;
        free(names[i]);
    }
    free(names);
    if (rc < 0)
        manifest_set_free(set);
    return rc;
}

void manifest_set_free(struct manifest_set *set)
{
    for (size_t i = 0; i < set->n; i++)
        manifest_free(set->v[i]);
    free(set->v);
    memset(set, 0, sizeof(*set));
}

const struct manifest *manifest_find(const struct manifest_set *set, const char *name)
{
    for (size_t i = 0; i < set->n; i++)
        if (strcmp(set->v[i]->name, name) == 0)
            return set->v[i];
    return NULL;
}

bool manifest_env_names(const struct manifest *m, const char *var)
{
    size_t n = strlen(var);
    for (char **e = m->env; e && *e; e++)
        if (strncmp(*e, var, n) == 0 && (*e)[n] == '=')
            return true;
    for (size_t i = 0; i < m->n_secret_env; i++)
        if (strcmp(m->secret_env[i].var, var) == 0)
            return true;
    return false;
}

const struct manifest_tool *manifest_tool(const struct manifest *m, const char *name)
{
    for (size_t i = 0; i < m->n_tools; i++)
        if (strcmp(m->tools[i].name, name) == 0)
            return &m->tools[i];
    return NULL;
}
