/* Sandbox profiles: the built-in defaults (identical to config/profiles/spoke.json, a
 * unit test compares them) and loading a JSON profile over a jail_config. The format
 * is documented in docs/nsjail-lite.md ("Profile format"). */
#include "internal.h"
#include "jsonfile.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

#define PATH_MAX_LEN 4096
#define MAX_LIST 256

static const char *const default_ro[] = {"/usr",  "/lib",           "/bin",
                                         "/sbin", "/etc/ssl/certs", "/etc/ld.so.cache"};
static const char *const default_ro_optional[] = {
    "/lib64", "/lib32", "/libx32", "/etc/alternatives", "/etc/localtime", "/etc/ssl/cert.pem",
};

static size_t strv_len(char **v)
{
    size_t n = 0;
    while (v && v[n])
        n++;
    return n;
}

static void binds_clear(struct jail_config *cfg)
{
    for (size_t i = 0; i < cfg->n_binds; i++) {
        free(cfg->binds[i].src);
        free(cfg->binds[i].dst);
    }
    free(cfg->binds);
    cfg->binds = NULL;
    cfg->n_binds = 0;
}

static void tmpfs_clear(struct jail_config *cfg)
{
    for (size_t i = 0; i < cfg->n_tmpfs; i++)
        free(cfg->tmpfs[i].dst);
    free(cfg->tmpfs);
    cfg->tmpfs = NULL;
    cfg->n_tmpfs = 0;
}

static struct jail_bind *bind_append(struct jail_config *cfg)
{
    cfg->binds = xrealloc(cfg->binds, (cfg->n_binds + 1) * sizeof(*cfg->binds));
    struct jail_bind *b = &cfg->binds[cfg->n_binds++];
    memset(b, 0, sizeof(*b));
    return b;
}

void jail_config_add_bind(struct jail_config *cfg, const char *src, const char *dst, bool writable)
{
    struct jail_bind *b = bind_append(cfg);
    b->src = xstrdup(src);
    b->dst = dst ? xstrdup(dst) : NULL;
    b->writable = writable;
}

void jail_config_add_tmpfs(struct jail_config *cfg, const char *dst, uint64_t size_mb)
{
    cfg->tmpfs = xrealloc(cfg->tmpfs, (cfg->n_tmpfs + 1) * sizeof(*cfg->tmpfs));
    cfg->tmpfs[cfg->n_tmpfs].dst = xstrdup(dst);
    cfg->tmpfs[cfg->n_tmpfs].size_mb = size_mb;
    cfg->n_tmpfs++;
}

void jail_config_set_env(struct jail_config *cfg, const char *name_value)
{
    const char *eq = strchr(name_value, '=');
    size_t name_len = eq ? (size_t)(eq - name_value) : strlen(name_value);
    size_t n = strv_len(cfg->env);
    for (size_t i = 0; i < n; i++) {
        if (strncmp(cfg->env[i], name_value, name_len) == 0 && cfg->env[i][name_len] == '=') {
            free(cfg->env[i]);
            cfg->env[i] = xstrdup(name_value);
            return;
        }
    }
    cfg->env = xrealloc(cfg->env, (n + 2) * sizeof(char *));
    cfg->env[n] = xstrdup(name_value);
    cfg->env[n + 1] = NULL;
}

/* A container image's root instead of the host's system binds (rootfs.c shows it). */
int jail_config_set_rootfs(struct jail_config *cfg, const char *dir)
{
    if (!dir || dir[0] != '/')
        return -1;
    /* The system binds present now (a profile's, or the built-in ones) show the
     * host's /usr and /etc: not in an image's root. Binds added later stay. */
    binds_clear(cfg);
    free(cfg->rootfs);
    cfg->rootfs = xstrdup(dir);
    return 0;
}

void jail_config_init(struct jail_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->namespaces = true;
    cfg->inside_uid = 1000;
    cfg->inside_gid = 1000;
    /* Above every subordinate id Debian and systemd hand out (jail.h). */
    cfg->host_id_base = 2000000000;
    cfg->host_id_count = 65536;
    cfg->host_id_lock_fd = -1;
    cfg->hostname = xstrdup("spoke");
    for (size_t i = 0; i < ARRAY_LEN(default_ro); i++)
        jail_config_add_bind(cfg, default_ro[i], NULL, false);
    for (size_t i = 0; i < ARRAY_LEN(default_ro_optional); i++) {
        jail_config_add_bind(cfg, default_ro_optional[i], NULL, false);
        cfg->binds[cfg->n_binds - 1].optional = true;
    }
    cfg->tmp_size_mb = 64;
    cfg->cwd = xstrdup("/");
    jail_config_set_env(cfg, "PATH=/usr/local/bin:/usr/bin:/bin");
    cfg->net = JAIL_NET_NONE;
    cfg->veth_host_netns_fd = -1;
    cfg->loopback_sink = -1;
    cfg->limits = (struct jail_limits){.as_mb = 1024,
                                       .cpu_s = 60,
                                       .fsize_mb = 64,
                                       .nofile = 256,
                                       .nproc = 64,
                                       .wall_s = 0,
                                       .memory_mb = 1024,
                                       .pids = 64,
                                       .cpu_percent = 100};
    cfg->seccomp_preset = xstrdup("c");
    cfg->seccomp_extra_allow = xcalloc(1, sizeof(char *));
    cfg->seccomp_action = JAIL_SECCOMP_ERRNO;
    cfg->stdin_fd = cfg->stdout_fd = cfg->stderr_fd = -1;
}

void jail_config_free(struct jail_config *cfg)
{
    if (!cfg)
        return;
    free(cfg->hostname);
    binds_clear(cfg);
    tmpfs_clear(cfg);
    free(cfg->cwd);
    free(cfg->rootfs);
    jf_strv_free(cfg->env);
    free(cfg->veth_host_cidr);
    free(cfg->veth_spoke_cidr);
    free(cfg->veth_host_ifname);
    jf_strv_free(cfg->loopback_listen);
    jf_strv_free(cfg->programs);
    free(cfg->seccomp_preset);
    jf_strv_free(cfg->seccomp_extra_allow);
    free(cfg->cgroup_parent);
    free(cfg->keep_fds);
    memset(cfg, 0, sizeof(*cfg));
    cfg->veth_host_netns_fd = -1;
    cfg->loopback_sink = -1;
    cfg->stdin_fd = cfg->stdout_fd = cfg->stderr_fd = -1;
}

static void replace_str(char **slot, const char *value)
{
    free(*slot);
    *slot = xstrdup(value);
}

/* "SRC" or "SRC:DST", both absolute. */
static bool add_bind_spec(struct jf_ctx *c, struct jail_config *cfg, const char *key,
                          const char *spec, bool writable, bool optional)
{
    const char *colon = strchr(spec, ':');
    char *src = colon ? xstrndup(spec, (size_t)(colon - spec)) : xstrdup(spec);
    const char *dst = colon ? colon + 1 : NULL;
    bool ok = src[0] == '/' && (!dst || dst[0] == '/');
    if (ok) {
        struct jail_bind *b = bind_append(cfg);
        b->src = src;
        b->dst = dst ? xstrdup(dst) : NULL;
        b->writable = writable;
        b->optional = optional;
        return true;
    }
    free(src);
    return jf_fail(c, "mounts", key, "'%s': paths must be absolute (SRC or SRC:DST)", spec);
}

static bool load_mounts(struct jf_ctx *c, struct jail_config *cfg, const json_t *m)
{
    static const char *const keys[] = {"ro", "ro_optional", "rw", "tmpfs", "tmp_size_mb", NULL};
    if (!jf_object(c, m, "mounts", keys))
        return false;
    char **ro = NULL, **ro_opt = NULL, **rw = NULL, **tmpfs = NULL;
    bool ok =
        jf_strings(c, m, "mounts", "ro", false, MAX_LIST, PATH_MAX_LEN, &ro, NULL) &&
        jf_strings(c, m, "mounts", "ro_optional", false, MAX_LIST, PATH_MAX_LEN, &ro_opt, NULL) &&
        jf_strings(c, m, "mounts", "rw", false, MAX_LIST, PATH_MAX_LEN, &rw, NULL) &&
        jf_strings(c, m, "mounts", "tmpfs", false, MAX_LIST, PATH_MAX_LEN, &tmpfs, NULL);
    if (ok && (ro || ro_opt || rw)) {
        /* A profile that names its binds replaces the defaults as a whole. */
        binds_clear(cfg);
        for (size_t i = 0; ok && ro && ro[i]; i++)
            ok = add_bind_spec(c, cfg, "ro", ro[i], false, false);
        for (size_t i = 0; ok && ro_opt && ro_opt[i]; i++)
            ok = add_bind_spec(c, cfg, "ro_optional", ro_opt[i], false, true);
        for (size_t i = 0; ok && rw && rw[i]; i++)
            ok = add_bind_spec(c, cfg, "rw", rw[i], true, false);
    }
    if (ok && tmpfs) {
        tmpfs_clear(cfg);
        for (size_t i = 0; ok && tmpfs[i]; i++) {
            char *colon = strchr(tmpfs[i], ':');
            uint64_t size = 16;
            if (colon) {
                *colon = '\0';
                ok =
                    parse_u64(colon + 1, 1, 65536, &size) ||
                    jf_fail(c, "mounts", "tmpfs", "'%s': size must be 1 to 65536 (MiB)", colon + 1);
            }
            if (ok && tmpfs[i][0] != '/')
                ok = jf_fail(c, "mounts", "tmpfs", "'%s': path must be absolute", tmpfs[i]);
            if (ok)
                jail_config_add_tmpfs(cfg, tmpfs[i], size);
        }
    }
    int64_t v;
    if (ok && json_object_get(m, "tmp_size_mb")) {
        ok = jf_int(c, m, "mounts", "tmp_size_mb", false, 1, 65536, &v);
        if (ok)
            cfg->tmp_size_mb = (uint64_t)v;
    }
    jf_strv_free(ro);
    jf_strv_free(ro_opt);
    jf_strv_free(rw);
    jf_strv_free(tmpfs);
    return ok;
}

static bool load_limit(struct jf_ctx *c, const json_t *l, const char *key, int64_t max,
                       uint64_t *out)
{
    int64_t v = -1;
    if (!jf_int(c, l, "limits", key, false, 0, max, &v))
        return false;
    if (v >= 0)
        *out = (uint64_t)v;
    return true;
}

static bool load_limits(struct jf_ctx *c, struct jail_config *cfg, const json_t *l)
{
    static const char *const keys[] = {"as_mb",  "cpu_s",     "fsize_mb", "nofile",      "nproc",
                                       "wall_s", "memory_mb", "pids",     "cpu_percent", NULL};
    return jf_object(c, l, "limits", keys) &&
           load_limit(c, l, "as_mb", 1 << 20, &cfg->limits.as_mb) &&
           load_limit(c, l, "cpu_s", 7 * 86400, &cfg->limits.cpu_s) &&
           load_limit(c, l, "fsize_mb", 1 << 20, &cfg->limits.fsize_mb) &&
           load_limit(c, l, "nofile", 1 << 20, &cfg->limits.nofile) &&
           load_limit(c, l, "nproc", 1 << 20, &cfg->limits.nproc) &&
           load_limit(c, l, "wall_s", 30 * 86400, &cfg->limits.wall_s) &&
           load_limit(c, l, "memory_mb", 1 << 30, &cfg->limits.memory_mb) &&
           load_limit(c, l, "pids", 1 << 22, &cfg->limits.pids) &&
           load_limit(c, l, "cpu_percent", 100000, &cfg->limits.cpu_percent);
}

static bool load_seccomp(struct jf_ctx *c, struct jail_config *cfg, const json_t *s,
                         const char *where)
{
    static const char *const keys[] = {"preset", "allow", "action", "description", NULL};
    if (!jf_object(c, s, where, keys))
        return false;
    const char *preset = NULL, *action = NULL;
    char **allow = NULL;
    if (!jf_string(c, s, where, "preset", false, 32, &preset) ||
        !jf_string(c, s, where, "action", false, 16, &action) ||
        !jf_strings(c, s, where, "allow", false, MAX_LIST, 64, &allow, NULL))
        return false;
    if (preset && !seccomp_preset_known(preset)) {
        jf_strv_free(allow);
        return jf_fail(c, where, "preset", "unknown preset '%s' (known: %s)", preset,
                       seccomp_preset_list());
    }
    if (action && strcmp(action, "errno") != 0 && strcmp(action, "kill") != 0) {
        jf_strv_free(allow);
        return jf_fail(c, where, "action", "must be \"errno\" or \"kill\"");
    }
    char why[256];
    if (allow && !seccomp_check_extra(allow, why, sizeof(why))) {
        jf_strv_free(allow);
        return jf_fail(c, where, "allow", "%s", why);
    }
    if (preset)
        replace_str(&cfg->seccomp_preset, preset);
    if (action)
        cfg->seccomp_action = strcmp(action, "kill") == 0 ? JAIL_SECCOMP_KILL : JAIL_SECCOMP_ERRNO;
    if (allow) {
        jf_strv_free(cfg->seccomp_extra_allow);
        cfg->seccomp_extra_allow = allow;
    }
    return true;
}

static bool load_env(struct jf_ctx *c, struct jail_config *cfg, const json_t *root)
{
    char **env = NULL;
    if (!jf_strings(c, root, "", "env", false, MAX_LIST, 8192, &env, NULL))
        return false;
    if (!env)
        return true;
    for (size_t i = 0; env[i]; i++) {
        const char *eq = strchr(env[i], '=');
        if (!eq || eq == env[i]) {
            jf_fail(c, "", "env", "'%s' is not NAME=VALUE", env[i]);
            jf_strv_free(env);
            return false;
        }
    }
    jf_strv_free(cfg->env);
    cfg->env = env;
    return true;
}

static bool load_root(struct jf_ctx *c, struct jail_config *cfg, const json_t *root)
{
    static const char *const keys[] = {"description", "namespaces",    "hostname", "uid", "gid",
                                       "host_ids",    "mounts",        "cwd",      "env", "limits",
                                       "seccomp",     "cgroup_parent", "rootfs",   NULL};
    if (!jf_object(c, root, "", keys))
        return false;
    const char *description = NULL, *hostname = NULL, *cwd = NULL, *cg_parent = NULL,
               *rootfs = NULL;
    int64_t uid = -1, gid = -1;
    if (!jf_string(c, root, "", "description", false, 4096, &description) ||
        !jf_bool(c, root, "", "namespaces", false, &cfg->namespaces) ||
        !jf_string(c, root, "", "hostname", false, 64, &hostname) ||
        !jf_int(c, root, "", "uid", false, 1, 65533, &uid) ||
        !jf_int(c, root, "", "gid", false, 1, 65533, &gid) ||
        !jf_string(c, root, "", "cwd", false, PATH_MAX_LEN, &cwd) ||
        !jf_string(c, root, "", "cgroup_parent", false, 1024, &cg_parent) ||
        !jf_string(c, root, "", "rootfs", false, PATH_MAX_LEN, &rootfs))
        return false;
    /* Before "mounts": the image replaces the system binds, a profile's own stay. */
    if (rootfs && jail_config_set_rootfs(cfg, rootfs) < 0)
        return jf_fail(c, "", "rootfs", "must be an absolute path");
    if (cg_parent) {
        if (cg_parent[0] != '/')
            return jf_fail(c, "", "cgroup_parent", "must be an absolute cgroup path");
        replace_str(&cfg->cgroup_parent, cg_parent);
    }
    if (hostname)
        replace_str(&cfg->hostname, hostname);
    if (cwd) {
        if (cwd[0] != '/')
            return jf_fail(c, "", "cwd", "must be an absolute path");
        replace_str(&cfg->cwd, cwd);
    }
    if (uid >= 0)
        cfg->inside_uid = (uid_t)uid;
    if (gid >= 0)
        cfg->inside_gid = (gid_t)gid;

    const json_t *ids = json_object_get(root, "host_ids");
    if (ids) {
        static const char *const id_keys[] = {"base", "count", NULL};
        int64_t base = cfg->host_id_base, count = cfg->host_id_count;
        if (!jf_object(c, ids, "host_ids", id_keys) ||
            !jf_int(c, ids, "host_ids", "base", false, 65536, INT32_MAX - 1, &base) ||
            !jf_int(c, ids, "host_ids", "count", false, 1, 1 << 20, &count))
            return false;
        if (base + count > INT32_MAX)
            return jf_fail(c, "host_ids", "count", "base + count must stay below 2^31");
        cfg->host_id_base = (uint32_t)base;
        cfg->host_id_count = (uint32_t)count;
    }
    const json_t *m = json_object_get(root, "mounts");
    if (m && !load_mounts(c, cfg, m))
        return false;
    if (!load_env(c, cfg, root))
        return false;
    const json_t *l = json_object_get(root, "limits");
    if (l && !load_limits(c, cfg, l))
        return false;
    const json_t *s = json_object_get(root, "seccomp");
    if (s && !load_seccomp(c, cfg, s, "seccomp"))
        return false;
    return true;
}

int jail_config_load_profile(struct jail_config *cfg, const char *path, char *err, size_t errlen)
{
    struct jf_ctx c = {.file = path, .err = err, .errlen = errlen};
    json_t *root = jf_load(&c, JF_DEFAULT_MAX_BYTES);
    if (!root)
        return -1;
    bool ok = load_root(&c, cfg, root);
    json_decref(root);
    return ok ? 0 : -1;
}

int jail_config_load_seccomp(struct jail_config *cfg, const char *path, char *err, size_t errlen)
{
    struct jf_ctx c = {.file = path, .err = err, .errlen = errlen};
    json_t *root = jf_load(&c, JF_DEFAULT_MAX_BYTES);
    if (!root)
        return -1;
    bool ok = load_seccomp(&c, cfg, root, "");
    json_decref(root);
    return ok ? 0 : -1;
}
