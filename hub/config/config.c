#include "config.h"
#include "jsonfile.h"
#include "secret.h"
#include "util.h"

#include <arpa/inet.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CONFIG_MAX_BYTES (256 * 1024)
#define PATH_MAX_LEN 4096

const char *isolation_name(enum isolation m)
{
    switch (m) {
    case ISO_NONE:
        return "none";
    case ISO_PROCESS:
        return "process";
    case ISO_NAMESPACE:
        return "namespace";
    }
    return "?";
}

bool isolation_parse(const char *s, enum isolation *out)
{
    for (int m = ISO_NONE; m <= ISO_NAMESPACE; m++)
        if (strcmp(s, isolation_name((enum isolation)m)) == 0) {
            *out = (enum isolation)m;
            return true;
        }
    return false;
}

void config_set(char **field, const char *value)
{
    free(*field);
    *field = value ? xstrdup(value) : NULL;
}

void config_defaults(struct hub_config *c, const char *exe_dir)
{
    memset(c, 0, sizeof(*c));
    c->isolation = ISO_NAMESPACE;
    c->user = xstrdup("default");
    c->spokes_dir = xstrdup("config/spokes");
    c->spoke_bin_dir = xasprintf("%s/spokes", exe_dir);
    c->profile = xstrdup("config/profiles/spoke.json");
    c->data_root = xstrdup("/var/lib/isolategpt/data");
    c->run_dir = xstrdup("/run/isolategpt");
    c->audit_path = xstrdup("/var/log/isolategpt/hub.jsonl");
    c->max_frame = 1024 * 1024;
    c->call_timeout_ms = 30000;
    c->start_timeout_ms = 10000;
    c->idle_exit_s = 300;
    c->serve_tools_search_above = -1; /* serve.tools "all" */
    c->oauth_jwks_refresh_s = 10;
    c->oauth_max_token_lifetime_s = 86400;
    c->max_call_depth = 4;
    c->max_spokes = 256;
    /* The ceiling of the adaptive limit, which starts at 16 (the fixed window of
     * before) and grows while the spoke keeps up: 32 sessions of a 100 ms tool need 32
     * (docs/serve.md, many sessions). */
    c->max_inflight = 64;
    c->inflight = (struct inflight_settings){.adaptive = true,
                                             .initial = INFLIGHT_DEFAULT_INITIAL,
                                             .min = INFLIGHT_DEFAULT_MIN,
                                             .tolerance_pct = INFLIGHT_DEFAULT_TOLERANCE_PCT,
                                             .slack_ms = INFLIGHT_DEFAULT_SLACK_MS};
    c->max_tools = MAX_TOOLS_DEFAULT;
    c->prestart = PRESTART_NONE;
    c->spoke_log_max = 1024 * 1024;
    cidr_parse("169.254.64.0/18", &c->veth_pool);
    c->proxy_port = 3128;
    c->transparent_egress = true;
    str_copy(c->veth_prefix, "vhb", sizeof(c->veth_prefix));
    /* Above every subordinate id Debian's useradd (SUB_UID_MAX 600100000) and
     * systemd's container range (to 1879048191) hand out, below 2^31: nsjail-lite/jail.h. */
    c->host_id_base = 2000000000;
    c->host_id_count = 65536;
    c->netproxy_bin = xasprintf("%s/netproxy", exe_dir);
    c->netproxy_audit = xstrdup("/var/log/isolategpt/netproxy.jsonl");
    c->netproxy_resolve = xcalloc(1, sizeof(char *));
    c->netproxy_allow_cidr = xcalloc(1, sizeof(char *));
    c->netproxy_ping_ms = 5000;
    c->netproxy_workers = 1;
    /* One netproxy serves every spoke: a ceiling, so that one spoke's flood cannot take
     * the host's memory (and with it the others' network) to the OOM killer. */
    c->netproxy_memory_mb = 1024;
    c->netproxy_refusal_rate = c->netproxy_refusal_burst = HUB_NETPROXY_UNSET;
    c->netproxy_conn_rate = c->netproxy_conn_burst = HUB_NETPROXY_UNSET;
    c->secrets_dir = xstrdup("/var/lib/isolategpt/secrets");
    c->secrets_key_file = xstrdup("/var/lib/isolategpt/secrets.key");
    c->llm_key_env = xstrdup("OPENAI_API_KEY");
}

void config_free(struct hub_config *c)
{
    free(c->file);
    free(c->user);
    free(c->spokes_dir);
    free(c->spoke_bin_dir);
    free(c->profile);
    free(c->data_root);
    free(c->run_dir);
    free(c->audit_path);
    free(c->audit_transcript);
    free(c->gateway_netns);
    free(c->netproxy_bin);
    free(c->netproxy_audit);
    jf_strv_free(c->netproxy_resolve);
    jf_strv_free(c->netproxy_allow_cidr);
    free(c->netproxy_upstream_ca);
    free(c->secrets_dir);
    free(c->secrets_key_file);
    free(c->llm_key_env);
    free(c->control_socket);
    secret_free(c->llm_api_key); /* wipes it */
    json_decref(c->llm);
    json_decref(c->memory);
    json_decref(c->policies);
    memset(c, 0, sizeof(*c));
}

bool config_set_veth_pool(struct hub_config *c, const char *s, char *err, size_t errlen)
{
    struct cidr p;
    if (!cidr_parse(s, &p) || p.family != AF_INET) {
        snprintf(err, errlen, "veth pool \"%.60s\" must be an IPv4 CIDR with zero host bits", s);
        return false;
    }
    if (p.prefix < 8 || p.prefix > 30) {
        snprintf(err, errlen, "veth pool \"%.60s\" must have a prefix from /8 to /30", s);
        return false;
    }
    /* The pool's addresses appear only inside the gateway namespace and the spokes'
     * namespaces, but they must still never look like somewhere real: only
     * link-local, RFC 1918 and CGNAT space. */
    struct sockaddr_in sin = {.sin_family = AF_INET};
    memcpy(&sin.sin_addr, p.addr, 4);
    enum addr_class k = addr_classify((struct sockaddr *)&sin);
    if (k != ADDR_LINK_LOCAL && k != ADDR_PRIVATE && k != ADDR_CGNAT) {
        snprintf(err, errlen,
                 "veth pool \"%.60s\" must be link-local, RFC 1918 or CGNAT space (it is %s)", s,
                 addr_class_name(k));
        return false;
    }
    c->veth_pool = p;
    return true;
}

static char *resolve(const char *file, const char *path)
{
    if (path[0] == '/')
        return xstrdup(path);
    char *copy = xstrdup(file);
    char *r = xasprintf("%s/%s", dirname(copy), path);
    free(copy);
    return r;
}

/* A path setting: resolved against the config file's directory. */
static bool get_path(struct jf_ctx *jc, const json_t *o, const char *where, const char *key,
                     const char *file, char **dst)
{
    const char *v = NULL;
    if (!jf_string(jc, o, where, key, false, PATH_MAX_LEN, &v))
        return false;
    if (v) {
        free(*dst);
        *dst = resolve(file, v);
    }
    return true;
}

static bool get_str(struct jf_ctx *jc, const json_t *o, const char *where, const char *key,
                    size_t max, char **dst)
{
    const char *v = NULL;
    if (!jf_string(jc, o, where, key, false, max, &v))
        return false;
    if (v)
        config_set(dst, v);
    return true;
}

static bool get_u64(struct jf_ctx *jc, const json_t *o, const char *where, const char *key,
                    int64_t min, int64_t max, uint64_t *dst)
{
    int64_t v = (int64_t)*dst;
    if (!jf_int(jc, o, where, key, false, min, max, &v))
        return false;
    *dst = (uint64_t)v;
    return true;
}

static bool load_network(struct jf_ctx *jc, const json_t *root, struct hub_config *c)
{
    static const char *const keys[] = {
        "veth_pool",    "veth_prefix",   "gateway_netns",      "proxy_port",
        "host_id_base", "host_id_count", "transparent_egress", NULL};
    json_t *n = json_object_get(root, "network");
    if (!n)
        return true;
    if (!jf_object(jc, n, "network", keys))
        return false;
    const char *pool = NULL, *gw = NULL, *prefix = NULL;
    if (!jf_string(jc, n, "network", "veth_prefix", false, 4, &prefix))
        return false;
    if (prefix) {
        for (const char *p = prefix; *p; p++)
            if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9')))
                return jf_fail(jc, "network", "veth_prefix", "must be of a-z and 0-9");
        str_copy(c->veth_prefix, prefix, sizeof(c->veth_prefix));
    }
    if (!jf_string(jc, n, "network", "veth_pool", false, 64, &pool) ||
        !jf_string(jc, n, "network", "gateway_netns", false, 64, &gw) ||
        !jf_bool(jc, n, "network", "transparent_egress", false, &c->transparent_egress))
        return false;
    if (pool) {
        char why[256];
        if (!config_set_veth_pool(c, pool, why, sizeof(why)))
            return jf_fail(jc, "network", "veth_pool", "%s", why);
    }
    if (gw) {
        for (const char *p = gw; *p; p++)
            if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-' || *p == '_'))
                return jf_fail(jc, "network", "gateway_netns", "must be of a-z, 0-9, - and _");
        config_set(&c->gateway_netns, gw);
    }
    uint64_t port = c->proxy_port, base = c->host_id_base, count = c->host_id_count;
    if (!get_u64(jc, n, "network", "proxy_port", 1, 65535, &port) ||
        !get_u64(jc, n, "network", "host_id_base", 1000, 0x7fffffff, &base) ||
        !get_u64(jc, n, "network", "host_id_count", 1, 1 << 24, &count))
        return false;
    if (base + count > 0x7fffffffULL)
        return jf_fail(jc, "network", "host_id_count", "host_id_base + host_id_count too large");
    c->proxy_port = (uint16_t)port;
    c->host_id_base = (uint32_t)base;
    c->host_id_count = (uint32_t)count;
    return true;
}

static bool load_netproxy(struct jf_ctx *jc, const json_t *root, struct hub_config *c)
{
    static const char *const keys[] = {
        "binary",      "audit",     "resolve", "upstream_allow_cidr", "ping_interval_ms", "workers",
        "upstream_ca", "memory_mb", "refusal_rate", "refusal_burst", "conn_rate", "conn_burst",
        NULL};
    json_t *n = json_object_get(root, "netproxy");
    if (!n)
        return true;
    if (!jf_object(jc, n, "netproxy", keys))
        return false;
    if (!get_path(jc, n, "netproxy", "binary", c->file, &c->netproxy_bin) ||
        !get_path(jc, n, "netproxy", "upstream_ca", c->file, &c->netproxy_upstream_ca) ||
        !get_u64(jc, n, "netproxy", "ping_interval_ms", 50, 600000, &c->netproxy_ping_ms) ||
        !get_u64(jc, n, "netproxy", "workers", 1, 64, &c->netproxy_workers) ||
        !get_u64(jc, n, "netproxy", "memory_mb", 0, 1 << 20, &c->netproxy_memory_mb) ||
        !get_u64(jc, n, "netproxy", "refusal_rate", 0, 1000000, &c->netproxy_refusal_rate) ||
        !get_u64(jc, n, "netproxy", "refusal_burst", 1, 10000000, &c->netproxy_refusal_burst) ||
        !get_u64(jc, n, "netproxy", "conn_rate", 0, 1000000, &c->netproxy_conn_rate) ||
        !get_u64(jc, n, "netproxy", "conn_burst", 1, 10000000, &c->netproxy_conn_burst))
        return false;
    const char *audit = NULL;
    if (!jf_string(jc, n, "netproxy", "audit", false, PATH_MAX_LEN, &audit))
        return false;
    if (audit) {
        free(c->netproxy_audit);
        c->netproxy_audit = strcmp(audit, "-") == 0 ? xstrdup("-") : resolve(c->file, audit);
    }
    char **list = NULL;
    if (!jf_strings(jc, n, "netproxy", "resolve", false, 64, 512, &list, NULL))
        return false;
    if (list) {
        jf_strv_free(c->netproxy_resolve);
        c->netproxy_resolve = list;
    }
    list = NULL;
    if (!jf_strings(jc, n, "netproxy", "upstream_allow_cidr", false, 64, 64, &list, NULL))
        return false;
    if (list) {
        for (char **p = list; *p; p++) {
            struct cidr cc;
            if (!cidr_parse(*p, &cc)) {
                jf_strv_free(list);
                return jf_fail(jc, "netproxy", "upstream_allow_cidr", "\"%.60s\" is not a CIDR",
                               *p);
            }
        }
        jf_strv_free(c->netproxy_allow_cidr);
        c->netproxy_allow_cidr = list;
    }
    return true;
}

/* "secrets": {"dir", "key_file"}: the secret store (secrets.h). */
static bool load_secrets(struct jf_ctx *jc, const json_t *root, struct hub_config *c)
{
    static const char *const keys[] = {"dir", "key_file", NULL};
    json_t *s = json_object_get(root, "secrets");
    if (!s)
        return true;
    return jf_object(jc, s, "secrets", keys) &&
           get_path(jc, s, "secrets", "dir", c->file, &c->secrets_dir) &&
           get_path(jc, s, "secrets", "key_file", c->file, &c->secrets_key_file);
}

const char *audit_content_name(enum audit_content v)
{
    return v == AUDIT_CONTENT_NONE ? "none" : v == AUDIT_CONTENT_FULL ? "full" : "hashes";
}

bool audit_content_parse(const char *s, enum audit_content *out)
{
    static const enum audit_content all[] = {AUDIT_CONTENT_NONE, AUDIT_CONTENT_HASHES,
                                             AUDIT_CONTENT_FULL};
    for (size_t i = 0; i < ARRAY_LEN(all); i++)
        if (strcmp(s, audit_content_name(all[i])) == 0) {
            *out = all[i];
            return true;
        }
    return false;
}

/* "audit": "PATH" (the log alone), or {"path", "content", "transcript"}. */
static bool load_audit(struct jf_ctx *jc, const json_t *root, struct hub_config *c)
{
    const json_t *a = json_object_get(root, "audit");
    const char *path = NULL, *content = NULL, *transcript = NULL;
    if (json_is_object(a)) {
        static const char *const keys[] = {"path", "content", "transcript", NULL};
        if (!jf_object(jc, a, "audit", keys) ||
            !jf_string(jc, a, "audit", "path", false, PATH_MAX_LEN, &path) ||
            !jf_string(jc, a, "audit", "content", false, 16, &content) ||
            !jf_string(jc, a, "audit", "transcript", false, PATH_MAX_LEN, &transcript))
            return false;
        if (content && !audit_content_parse(content, &c->audit_content))
            return jf_fail(jc, "audit", "content", "must be \"none\", \"hashes\" or \"full\"");
    } else if (a && !jf_string(jc, root, "", "audit", false, PATH_MAX_LEN, &path)) {
        return false;
    }
    if (path) {
        free(c->audit_path);
        c->audit_path = strcmp(path, "-") == 0 ? xstrdup("-") : resolve(c->file, path);
    }
    if (transcript) {
        if (strcmp(transcript, "-") == 0)
            return jf_fail(jc, "audit", "transcript", "must be a file (it is kept mode 0600)");
        free(c->audit_transcript);
        c->audit_transcript = resolve(c->file, transcript);
    }
    return true;
}

/* "inflight": how a spoke's in-flight limit is sized below its max_inflight
 * (inflight.h). */
static bool load_inflight(struct jf_ctx *jc, const json_t *root, struct hub_config *c)
{
    static const char *const keys[] = {"adaptive", "initial", "min", "latency_tolerance_pct",
                                       "latency_slack_ms", NULL};
    json_t *o = json_object_get(root, "inflight");
    if (!o)
        return true;
    if (!jf_object(jc, o, "inflight", keys))
        return false;
    uint64_t initial = c->inflight.initial, min = c->inflight.min, tol = c->inflight.tolerance_pct,
             slack = c->inflight.slack_ms;
    if (!jf_bool(jc, o, "inflight", "adaptive", false, &c->inflight.adaptive) ||
        !get_u64(jc, o, "inflight", "initial", 1, MAX_INFLIGHT_LIMIT, &initial) ||
        !get_u64(jc, o, "inflight", "min", 1, MAX_INFLIGHT_LIMIT, &min) ||
        !get_u64(jc, o, "inflight", "latency_tolerance_pct", 101, 10000, &tol) ||
        !get_u64(jc, o, "inflight", "latency_slack_ms", 0, 60000, &slack))
        return false;
    if (min > initial)
        return jf_fail(jc, "inflight", "min", "must be at most initial (%llu)",
                       (unsigned long long)initial);
    c->inflight.initial = (unsigned)initial;
    c->inflight.min = (unsigned)min;
    c->inflight.tolerance_pct = (unsigned)tol;
    c->inflight.slack_ms = (unsigned)slack;
    return true;
}

/* hub serve's control socket (hub/serve/background/serve_control.c). */
static bool load_serve(struct jf_ctx *jc, const json_t *root, struct hub_config *c)
{
    static const char *const keys[] = {"control_socket",
                                       "control_users",
                                       "approval_wait_s",
                                       "approvals_only",
                                       "idle_exit_s",
                                       "oauth_jwks_refresh_s",
                                       "oauth_max_token_lifetime_s",
                                       "tools",
                                       NULL};
    json_t *s = json_object_get(root, "serve");
    if (!s)
        return true;
    if (!jf_object(jc, s, "serve", keys))
        return false;
    const char *sock = NULL, *users = NULL;
    if (!jf_string(jc, s, "serve", "control_socket", false, 107, &sock) ||
        !jf_string(jc, s, "serve", "control_users", false, 16, &users))
        return false;
    uint64_t wait = c->approval_wait_s, idle = c->idle_exit_s, jwks = c->oauth_jwks_refresh_s;
    uint64_t life = c->oauth_max_token_lifetime_s;
    if (!get_u64(jc, s, "serve", "approval_wait_s", 0, 86400, &wait) ||
        !get_u64(jc, s, "serve", "idle_exit_s", 0, 86400 * 7, &idle) ||
        !get_u64(jc, s, "serve", "oauth_jwks_refresh_s", 1, 86400, &jwks) ||
        !get_u64(jc, s, "serve", "oauth_max_token_lifetime_s", 60, 86400 * 366, &life) ||
        !jf_bool(jc, s, "serve", "approvals_only", false, &c->approvals_only))
        return false;
    /* "tools": "all", "search", or N: search once a session would list more than N. */
    const json_t *tools = json_object_get(s, "tools");
    if (json_is_string(tools) && strcmp(json_string_value(tools), "all") == 0)
        c->serve_tools_search_above = -1;
    else if (json_is_string(tools) && strcmp(json_string_value(tools), "search") == 0)
        c->serve_tools_search_above = 0;
    else if (json_is_integer(tools) && json_integer_value(tools) >= 0 &&
             json_integer_value(tools) <= 1000000)
        c->serve_tools_search_above = (int)json_integer_value(tools);
    else if (tools)
        return jf_fail(jc, "serve", "tools",
                       "must be \"all\", \"search\" or a number of tools past which the "
                       "tools are searched");
    c->approval_wait_s = (unsigned)wait;
    c->idle_exit_s = (unsigned)idle;
    c->oauth_jwks_refresh_s = (unsigned)jwks;
    c->oauth_max_token_lifetime_s = (unsigned)life;
    if (sock) {
        free(c->control_socket);
        c->control_socket = sock[0] ? resolve(c->file, sock) : xstrdup("");
    }
    if (users) {
        if (strcmp(users, "root") == 0)
            c->control_users = CONTROL_USERS_ROOT;
        else if (strcmp(users, "unix") == 0)
            c->control_users = CONTROL_USERS_UNIX;
        else
            return jf_fail(jc, "serve", "control_users", "must be \"root\" or \"unix\"");
    }
    return true;
}

static bool load_root(struct jf_ctx *jc, const json_t *root, struct hub_config *c)
{
    static const char *const keys[] = {"isolation",
                                       "user",
                                       "spokes_dir",
                                       "spoke_bin_dir",
                                       "profile",
                                       "data_root",
                                       "run_dir",
                                       "audit",
                                       "max_frame_bytes",
                                       "call_timeout_ms",
                                       "start_timeout_ms",
                                       "max_call_depth",
                                       "max_spokes",
                                       "spoke_log_max_bytes",
                                       "max_inflight",
                                       "inflight",
                                       "max_tools",
                                       "prestart",
                                       "idle_s",
                                       "network",
                                       "netproxy",
                                       "secrets",
                                       "llm",
                                       "memory",
                                       "serve",
                                       "policies",
                                       NULL};
    if (!jf_object(jc, root, "", keys))
        return false;
    const char *iso = NULL;
    if (!jf_string(jc, root, "", "isolation", false, 16, &iso))
        return false;
    if (iso && !isolation_parse(iso, &c->isolation))
        return jf_fail(jc, "", "isolation", "must be \"none\", \"process\" or \"namespace\"");
    if (!get_str(jc, root, "", "user", 64, &c->user) ||
        !get_path(jc, root, "", "spokes_dir", c->file, &c->spokes_dir) ||
        !get_path(jc, root, "", "spoke_bin_dir", c->file, &c->spoke_bin_dir) ||
        !get_path(jc, root, "", "profile", c->file, &c->profile) ||
        !get_path(jc, root, "", "data_root", c->file, &c->data_root) ||
        !get_path(jc, root, "", "run_dir", c->file, &c->run_dir))
        return false;
    if (!load_audit(jc, root, c))
        return false;
    uint64_t frame = c->max_frame, depth = c->max_call_depth, spokes = c->max_spokes,
             logmax = c->spoke_log_max, inflight = c->max_inflight, tools = c->max_tools;
    if (!get_u64(jc, root, "", "max_frame_bytes", 4096, 64 << 20, &frame) ||
        !get_u64(jc, root, "", "call_timeout_ms", 10, 86400000, &c->call_timeout_ms) ||
        !get_u64(jc, root, "", "start_timeout_ms", 10, 600000, &c->start_timeout_ms) ||
        !get_u64(jc, root, "", "max_call_depth", 1, 16, &depth) ||
        !get_u64(jc, root, "", "max_spokes", 1, 4096, &spokes) ||
        !get_u64(jc, root, "", "spoke_log_max_bytes", 0, 1LL << 32, &logmax) ||
        !get_u64(jc, root, "", "max_inflight", 1, MAX_INFLIGHT_LIMIT, &inflight) ||
        !get_u64(jc, root, "", "max_tools", 1, MANIFEST_MAX_TOOLS, &tools) ||
        !get_u64(jc, root, "", "idle_s", 0, 86400 * 365, &c->idle_s))
        return false;
    const char *prestart = NULL;
    if (!jf_string(jc, root, "", "prestart", false, 16, &prestart))
        return false;
    if (prestart && !prestart_parse(prestart, &c->prestart))
        return jf_fail(jc, "", "prestart", "must be \"none\", \"session\" or \"service\"");
    c->max_inflight = (unsigned)inflight;
    c->max_tools = tools;
    c->max_frame = frame;
    c->max_call_depth = (unsigned)depth;
    c->max_spokes = spokes;
    c->spoke_log_max = logmax;
    if (!load_inflight(jc, root, c))
        return false;
    if (!load_network(jc, root, c) || !load_netproxy(jc, root, c) || !load_serve(jc, root, c) ||
        !load_secrets(jc, root, c))
        return false;
    json_t *llm = json_object_get(root, "llm");
    if (llm) {
        if (!json_is_object(llm))
            return jf_fail(jc, "", "llm", "must be an object");
        const char *keyenv = NULL;
        if (!jf_string(jc, llm, "llm", "api_key_env", false, 128, &keyenv))
            return false;
        if (keyenv)
            config_set(&c->llm_key_env, keyenv);
        c->llm = json_incref(llm);
    }
    json_t *mem = json_object_get(root, "memory");
    if (mem) {
        if (!json_is_object(mem))
            return jf_fail(jc, "", "memory", "must be an object");
        c->memory = json_incref(mem);
    }
    /* Argument-source rules (hub/assistant/policy.h), checked where they are used. */
    json_t *pol = json_object_get(root, "policies");
    if (pol) {
        if (!json_is_array(pol))
            return jf_fail(jc, "", "policies", "must be an array of rules");
        c->policies = json_incref(pol);
    }
    if (!user_id_valid(c->user))
        return jf_fail(jc, "", "user", "must be 1 to 64 characters of a-z, A-Z, 0-9, _ and -");
    return true;
}

int config_load(struct hub_config *c, const char *path, char *err, size_t errlen)
{
    struct jf_ctx jc = {.file = path, .err = err, .errlen = errlen};
    config_set(&c->file, path);
    json_t *root = jf_load(&jc, CONFIG_MAX_BYTES);
    if (!root)
        return -1;
    bool ok = load_root(&jc, root, c);
    json_decref(root);
    return ok ? 0 : -1;
}

struct secret_store *secret_store_new(const struct hub_config *cfg)
{
    return secret_store_open(cfg->secrets_dir, cfg->secrets_key_file);
}

int hubca_ensure(const struct hub_config *cfg, struct hub_ca *ca, char *err, size_t errlen)
{
    return hubca_load(cfg->secrets_dir, ca, err, errlen);
}

/* NAME in the state directory, which holds the data root (/var/lib/isolategpt/data):
 * a test's hub, whose data root is in its own folder, gets keys of its own there. */
static char *state_file(const struct hub_config *cfg, const char *name)
{
    const char *d = cfg->data_root;
    size_t n = strlen(d);
    while (n > 1 && d[n - 1] == '/')
        n--;
    while (n > 0 && d[n - 1] != '/')
        n--;
    if (n == 0)
        return xstrdup(name);
    return xasprintf("%.*s/%s", (int)(n > 1 ? n - 1 : n), d, name);
}

char *config_audit_key_path(const struct hub_config *cfg)
{
    return state_file(cfg, "audit.key");
}

char *config_netproxy_key_path(const struct hub_config *cfg)
{
    return state_file(cfg, "netproxy-audit.key");
}

char *config_netproxy_first_seen_path(const struct hub_config *cfg)
{
    return state_file(cfg, "netproxy-first-seen.tsv");
}
